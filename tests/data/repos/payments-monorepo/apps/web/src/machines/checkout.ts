// The checkout: from cart to a charged order. The card is charged by an
// invoked promise; the gateway deduplicates by the order id.
import { assign, fromPromise, setup } from 'xstate';
import { gateway } from '../gateway';

interface CheckoutContext {
  orderId: string;
  total: number;
  items: string[];
  failure: string;
}

type CheckoutEvent =
  | { type: 'ADD_ITEM'; sku: string }
  | { type: 'PAY'; orderId: string; total: number }
  | { type: 'CANCEL' };

export const checkoutMachine = setup({
  types: {} as { context: CheckoutContext; events: CheckoutEvent },
  actors: {
    chargeCard: fromPromise(async ({ input }: { input: { orderId: string; total: number } }) =>
      gateway.charge(input.orderId, input.total),
    ),
  },
  guards: {
    hasItems: ({ context }) => context.items.length > 0,
  },
}).createMachine({
  id: 'checkout',
  initial: 'cart',
  context: { orderId: '', total: 0, items: [], failure: '' },
  states: {
    cart: {
      on: {
        ADD_ITEM: {
          actions: assign({ items: ({ context, event }) => [...context.items, event.sku] }),
        },
        PAY: {
          target: 'charging',
          guard: 'hasItems',
          actions: assign({
            orderId: ({ event }) => event.orderId,
            total: ({ event }) => event.total,
          }),
        },
      },
    },
    charging: {
      invoke: {
        id: 'charge',
        src: 'chargeCard',
        input: ({ context }) => ({ orderId: context.orderId, total: context.total }),
        onDone: 'paid',
        onError: {
          target: 'declined',
          actions: assign({ failure: 'declined' }),
        },
      },
      on: { CANCEL: 'cart' },
    },
    declined: {
      on: { PAY: 'charging', CANCEL: 'cart' },
    },
    paid: { type: 'final' },
  },
});
