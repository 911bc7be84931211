// Setting up an authenticator app (TOTP) for a signed-in user: the
// provider issues a secret, the user scans it and types the first code.
import { assign, fromPromise, setup } from 'xstate';
import { identity } from '../api/identity';

export type MfaSetupEvent =
  | { type: 'VERIFY'; code: string }
  | { type: 'CANCEL' }
  | { type: 'RETRY' };

export const mfaSetupMachine = setup({
  types: {
    context: {} as { accessToken: string; secretCode: string | null; error: string | null },
    events: {} as MfaSetupEvent,
    input: {} as { accessToken: string },
  },
  actors: {
    associate: fromPromise(({ input }: { input: { accessToken: string } }) =>
      identity.associateSoftwareToken(input.accessToken),
    ),
    verify: fromPromise(({ input }: { input: { accessToken: string; code: string } }) =>
      identity.verifySoftwareToken(input.accessToken, input.code),
    ),
  },
  actions: {
    clearError: assign({ error: null }),
  },
}).createMachine({
  id: 'mfaSetup',
  context: ({ input }) => ({ accessToken: input?.accessToken ?? '', secretCode: null, error: null }),
  initial: { target: 'associating', actions: 'clearError' },
  states: {
    associating: {
      invoke: {
        id: 'associate software token',
        src: 'associate',
        input: ({ context }) => ({ accessToken: context.accessToken }),
        onDone: {
          target: 'showingSecret',
          actions: assign({ secretCode: ({ event }) => event.output.secretCode }),
        },
        onError: {
          target: 'failed',
          actions: assign({ error: ({ event }) => String(event.error) }),
        },
      },
    },
    showingSecret: {
      on: {
        VERIFY: 'verifying',
        CANCEL: 'cancelled',
      },
    },
    verifying: {
      invoke: {
        id: 'verify software token',
        src: 'verify',
        input: ({ context, event }) => ({
          accessToken: context.accessToken,
          code: (event as { code: string }).code,
        }),
        onDone: 'enabled',
        onError: {
          target: 'showingSecret',
          actions: assign({ error: 'That code did not match. Try the next one.' }),
        },
      },
    },
    failed: {
      on: { RETRY: 'associating', CANCEL: 'cancelled' },
    },
    enabled: { type: 'final' },
    cancelled: { type: 'final' },
  },
});
