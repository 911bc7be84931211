import { assign, setup } from 'xstate';

interface RiskSignal {
  rule: string;
  score: number;
}

export const paymentAttemptMachine = setup({
  types: {} as {
    context: { errors: string[]; retries: number; riskLog: RiskSignal[] };
    events:
      | { type: 'PAYMENT_FAILED'; error: string }
      | { type: 'RETRY_REQUESTED' }
      | { type: 'FRAUD_FLAGGED'; signal: RiskSignal }
      | { type: 'PAYMENT_SUCCEEDED' };
  },
}).createMachine({
  id: 'paymentAttempt',
  context: { errors: [], retries: 0, riskLog: [] },
  initial: 'pending',
  states: {
    pending: {
      on: {
        PAYMENT_FAILED: {
          actions: assign({ errors: ({ context, event }) => [...context.errors, event.error] }),
        },
        RETRY_REQUESTED: {
          actions: assign(({ context }) => ({ retries: context.retries + 1 })),
        },
        FRAUD_FLAGGED: {
          actions: assign({
            riskLog: ({ context, event }) => [
              ...context.riskLog,
              { ...event.signal, at: Date.now() },
            ],
          }),
        },
        PAYMENT_SUCCEEDED: 'paid',
      },
    },
    paid: { type: 'final' },
  },
});
