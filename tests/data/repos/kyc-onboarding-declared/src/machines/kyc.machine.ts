// Identity verification for a new account (XState v5). The provider's
// check is invoked; when it fails, the machine waits and invokes it again.
import { assign, fromPromise, setup } from 'xstate';
import { kycProvider } from '../api/kycProvider';

export type KycEvent =
  | { type: 'START'; applicantId: string; country: string }
  | {
      type: 'SUBMIT_DOCUMENTS';
      documentId: string;
      kind: 'passport' | 'id_card' | 'driving_licence';
    }
  | { type: 'RETRY' }
  | { type: 'APPROVE'; reviewerId: string }
  | { type: 'REJECT'; reviewerId: string; reason: string }
  | { type: 'CANCEL' };

interface KycContext {
  applicantId: string | null;
  documentId: string | null;
  attempts: number;
  rejectionReason: string | null;
}

const MAX_ATTEMPTS = 3;

export const kycMachine = setup({
  types: {
    context: {} as KycContext,
    events: {} as KycEvent,
  },
  actors: {
    verifyDocument: fromPromise(async ({ input }: { input: { documentId: string | null } }) =>
      kycProvider.verify(input.documentId ?? ''),
    ),
  },
  actions: {
    notifyCompliance: ({ context }) => kycProvider.notifyCompliance(context.applicantId),
    sendWelcomeEmail: ({ context }) => kycProvider.sendWelcome(context.applicantId),
  },
  guards: {
    canRetry: ({ context }) => context.attempts < MAX_ATTEMPTS,
  },
}).createMachine({
  id: 'kyc',
  initial: 'idle',
  context: { applicantId: null, documentId: null, attempts: 0, rejectionReason: null },
  states: {
    idle: {
      on: {
        START: {
          target: 'collecting',
          actions: assign({ applicantId: ({ event }) => event.applicantId }),
        },
      },
    },
    collecting: {
      on: {
        SUBMIT_DOCUMENTS: {
          target: 'verifying',
          actions: assign({ documentId: ({ event }) => event.documentId }),
        },
        CANCEL: 'cancelled',
      },
    },
    verifying: {
      invoke: {
        id: 'verifyDocument',
        src: 'verifyDocument',
        input: ({ context }) => ({ documentId: context.documentId }),
        onDone: 'manualReview',
        onError: {
          target: 'retrying',
          actions: assign({ attempts: ({ context }) => context.attempts + 1 }),
        },
      },
      on: {
        // A newer upload replaces the document being verified.
        SUBMIT_DOCUMENTS: {
          target: 'verifying',
          reenter: true,
          actions: assign({ documentId: ({ event }) => event.documentId }),
        },
      },
    },
    retrying: {
      after: {
        5000: [{ target: 'verifying', guard: 'canRetry' }, { target: 'failed' }],
      },
      on: { CANCEL: 'cancelled' },
    },
    failed: {
      on: { RETRY: 'verifying', CANCEL: 'cancelled' },
    },
    manualReview: {
      entry: 'notifyCompliance',
      on: {
        APPROVE: 'approved',
        REJECT: {
          target: 'rejected',
          actions: assign({ rejectionReason: ({ event }) => event.reason }),
        },
      },
    },
    approved: { type: 'final', entry: 'sendWelcomeEmail' },
    rejected: { type: 'final' },
    cancelled: { type: 'final' },
  },
});
