// What every workflow's context and events look like. Definitions are
// authored in Stately Studio and exported as JSON (definitions/); the
// engine supplies the implementations they name (src/engine/setup.ts).

export interface InvoiceLine {
  lineId: string;
  description: string;
  amountCents: number;
}

export interface WorkflowContext {
  workflowId: string;
  tenantId: string;
  requesterEmail: string;
  lines: InvoiceLine[];
  totalCents: number;
  approvedBy: string | null;
  paymentId: string | null;
  attempts: number;
}

export type WorkflowEvent =
  | { type: 'invoice received'; invoiceId: string; totalCents: number }
  | { type: 'line item added'; line: InvoiceLine }
  | { type: 'manager approved'; approverId: string }
  | { type: 'manager rejected'; approverId: string; reason: string }
  | { type: 'documents received'; documentIds: string[] }
  | { type: 'check passed' }
  | { type: 'check failed'; reason: string }
  | { type: 'payment scheduled'; paymentId: string }
  | { type: 'payment failed'; reason: string }
  | { type: 'ledger entry posted'; entryId: string; amountCents: number }
  | { type: 'payout confirmed'; payoutId: string };

export interface WorkflowDefinition {
  id: string;
  initial: string;
  context?: Partial<WorkflowContext>;
  states: Record<string, unknown>;
}
