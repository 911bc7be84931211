// Invoice approval: lines arrive from the accounts-payable inbox, one or
// two managers approve, then the payment is requested.
import definition from '../../definitions/invoice-approval.json' with { type: 'json' };
import { engine } from '../engine/setup.js';

export const invoiceApprovalMachine = engine.createMachine(definition);
