// The implementations every workflow definition may name. Definitions
// perform no calls themselves: an action writes a command to the outbox
// (src/outbox/), a worker performs it, and its result comes back as an
// event through the queue (src/workers/), delivered at least once.
// `engine.createMachine(definition)` makes a runnable machine of one.
import { assign, setup } from 'xstate';
import { enqueue } from '../outbox/enqueue.js';
import type { WorkflowContext, WorkflowEvent } from './types.js';

type LineItemAdded = Extract<WorkflowEvent, { type: 'line item added' }>;

/** Invoices above this need a second approver. */
const SINGLE_APPROVER_LIMIT_CENTS = 1_000_000;

export const engine = setup({
  types: {
    context: {} as WorkflowContext,
    events: {} as WorkflowEvent,
  },
  actions: {
    appendLine: assign({
      lines: ({ context, event }) => [...context.lines, (event as LineItemAdded).line],
      totalCents: ({ context, event }) => context.totalCents + (event as LineItemAdded).line.amountCents,
    }),
    recordApproval: assign({
      approvedBy: ({ event }) => (event as { approverId: string }).approverId,
    }),
    requestPayment: ({ context }) =>
      enqueue('payments.schedule', {
        workflowId: context.workflowId,
        tenantId: context.tenantId,
        amountCents: context.totalCents,
      }),
    requestSanctionsCheck: ({ context }) =>
      enqueue('compliance.sanctions', { workflowId: context.workflowId, tenantId: context.tenantId }),
    notifyRequester: ({ context }) =>
      enqueue('notifications.send', { email: context.requesterEmail, template: 'workflow-update' }),
  },
  guards: {
    withinSingleApproverLimit: ({ context }) => context.totalCents <= SINGLE_APPROVER_LIMIT_CENTS,
  },
});
