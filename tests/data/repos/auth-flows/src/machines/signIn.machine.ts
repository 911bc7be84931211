// Sign-in with a password, then whatever challenge the provider answers
// with: a one-time code (SMS or an authenticator app) or a new password.
// Spawned by the authenticator as `signInActor`; it ends in `signedIn`,
// whose output is the session.
import { assign, fromPromise, setup } from 'xstate';
import { identity, type Session, type SignInResult } from '../api/identity';

export interface SignInContext {
  username: string;
  challengeSession: string | null;
  session: Session | null;
  error: string | null;
}

export type SignInEvent =
  | { type: 'CHANGE'; field: 'username' | 'password'; value: string }
  | { type: 'SUBMIT'; username: string; password: string }
  | { type: 'SUBMIT_CODE'; code: string }
  | { type: 'SUBMIT_NEW_PASSWORD'; password: string }
  | { type: 'BACK' };

/**
 * A challenge step: an `edit` form that `events` submit, and a `submit`
 * state that answers the challenge. Each challenge of the provider is one
 * of these, so they are built by one function.
 */
function confirmSignInState(events: string[], target = '#signIn.signedIn') {
  return {
    initial: 'edit',
    states: {
      edit: {
        on: Object.fromEntries(events.map((event) => [event, 'submit'])),
      },
      submit: {
        invoke: {
          id: 'respond to challenge',
          src: 'respondToChallenge',
          input: ({ context, event }: { context: SignInContext; event: any }) => ({
            challengeSession: context.challengeSession,
            code: event.code ?? event.password,
          }),
          onDone: {
            target,
            actions: assign({ session: ({ event }) => event.output }),
          },
          onError: {
            target: 'edit',
            actions: assign({ error: ({ event }) => String(event.error) }),
          },
        },
      },
    },
    on: { BACK: '#signIn.signIn' },
  };
}

export const signInMachine = setup({
  types: {
    context: {} as SignInContext,
    events: {} as SignInEvent,
  },
  actors: {
    signIn: fromPromise(({ input }: { input: { username: string; password: string } }) =>
      identity.signIn(input.username, input.password),
    ),
    respondToChallenge: fromPromise(
      ({ input }: { input: { challengeSession: string | null; code: string } }) =>
        identity.respondToChallenge(input.challengeSession ?? '', input.code),
    ),
  },
  guards: {
    isMfaRequired: ({ event }) =>
      (event as unknown as { output: SignInResult }).output.kind === 'mfaRequired',
    isNewPasswordRequired: ({ event }) =>
      (event as unknown as { output: SignInResult }).output.kind === 'newPasswordRequired',
  },
}).createMachine({
  id: 'signIn',
  output: ({ context }) => context.session,
  context: { username: '', challengeSession: null, session: null, error: null },
  initial: 'signIn',
  states: {
    signIn: {
      initial: 'edit',
      states: {
        edit: {
          entry: assign({ error: null }),
          on: {
            SUBMIT: {
              target: 'submit',
              actions: assign({ username: ({ event }) => event.username }),
            },
          },
        },
        submit: {
          invoke: {
            id: 'sign in',
            src: 'signIn',
            input: ({ event }) => {
              const { username, password } = event as Extract<SignInEvent, { type: 'SUBMIT' }>;
              return { username, password };
            },
            onDone: [
              {
                target: '#signIn.confirmSignIn',
                guard: 'isMfaRequired',
                actions: assign({ challengeSession: ({ event }) => (event.output as any).challengeSession }),
              },
              {
                target: '#signIn.forceNewPassword',
                guard: 'isNewPasswordRequired',
                actions: assign({ challengeSession: ({ event }) => (event.output as any).challengeSession }),
              },
              {
                target: '#signIn.signedIn',
                actions: assign({ session: ({ event }) => (event.output as any).session }),
              },
            ],
            onError: {
              target: 'edit',
              actions: assign({ error: ({ event }) => String(event.error) }),
            },
          },
        },
      },
    },
    confirmSignIn: {
      ...confirmSignInState(['SUBMIT_CODE']),
    },
    forceNewPassword: {
      ...confirmSignInState(['SUBMIT_NEW_PASSWORD']),
    },
    signedIn: {
      type: 'final',
    },
  },
});
