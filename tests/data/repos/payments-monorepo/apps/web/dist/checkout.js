// Built by vite from src/machines/checkout.ts; not a source.
import { createMachine } from "xstate";
export const checkoutMachine = createMachine({ id: "checkout", initial: "cart", states: { cart: { on: { PAY: "nowhere" } } } });
