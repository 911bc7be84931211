import { assign, setup } from 'xstate';
import { pickAddressFields } from '../lib/normalize';

interface Address {
  line1?: string;
  city?: string;
  region?: string;
  postcode?: string;
}

export const shippingAddressMachine = setup({
  types: {} as {
    context: { address: Address; billing: Address; lookups: number };
    events:
      | { type: 'ADDRESS_CHANGED'; address: Partial<Address> }
      | { type: 'BILLING_SAME_AS_SHIPPING' }
      | { type: 'POSTCODE_LOOKED_UP'; result: Record<string, unknown> };
  },
}).createMachine({
  id: 'shippingAddress',
  context: { address: {}, billing: {}, lookups: 0 },
  initial: 'editing',
  states: {
    editing: {
      on: {
        ADDRESS_CHANGED: {
          actions: assign({
            address: ({ context, event }) => ({ ...context.address, ...event.address }),
          }),
        },
        BILLING_SAME_AS_SHIPPING: {
          actions: assign({
            billing: ({ context }) => Object.assign({}, context.billing, context.address),
          }),
        },
        POSTCODE_LOOKED_UP: {
          actions: assign({
            address: ({ context, event }) => ({
              ...context.address,
              ...pickAddressFields(event.result),
            }),
          }),
        },
      },
    },
  },
});
