import { createMachine } from 'xstate';

/**
 * Payments from the provider's webhook: each delivery carries the
 * provider's payment id, which the linter offers as the event id.
 */
export const payments = createMachine({
  id: 'payments',
  initial: 'waiting',
  meta: {
    idemchart: {
      sources: { webhook: { retry_horizon: '3d' } },
      events: {
        // Sent again by the provider until we answer 200.
        PAYMENT_RECEIVED: {
          source: 'webhook',
          payload: { paymentId: 'string', amount: 'number' },
        },
        REFUNDED: { source: 'webhook', payload: { refundId: 'string' } },
      },
    },
  },
  states: {
    waiting: { on: { PAYMENT_RECEIVED: 'paid' } },
    paid: { on: { REFUNDED: 'refunded' } },
    refunded: { type: 'final' },
  },
});
