// A shopping cart, as the storefront team writes it: comments everywhere,
// trailing commas, and the idemchart facts next to the config.
import { createMachine, assign } from 'xstate';

export const cart = createMachine({
  id: 'cart',
  context: { items: 0 },
  initial: 'open',
  meta: {
    idemchart: {
      // The checkout comes from the payment page, with its own id.
      events: {
        CHECKOUT: { id: 'checkoutId' }, // one per click on "pay"
      },
    },
  },
  states: {
    open: {
      on: {
        ADD: { actions: assign({ items: ({ context }) => context.items + 1 }) },
        'item.removed': { actions: assign({ items: ({ context }) => context.items - 1 }) },
        CHECKOUT: 'paying',
      },
    },
    /* Paying: the provider answers once. */
    paying: {
      on: { PAID: 'done' },
    },
    done: { type: 'final' },
  },
});
