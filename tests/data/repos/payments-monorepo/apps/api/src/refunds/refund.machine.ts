// A refund: requested by support, approved by a second person, paid out.
// XState comes through the workspace's own flow package.
import { createMachine } from '@payments/flow';

export const refundMachine = createMachine({
  id: 'refund',
  initial: 'requested',
  states: {
    requested: {
      on: { APPROVE: 'approved', REJECT: 'rejected' },
    },
    approved: {
      on: { PAYOUT_SENT: 'paid', PAYOUT_FAILED: 'approved' },
    },
    paid: { type: 'final' },
    rejected: { type: 'final' },
  },
});
