// The authenticator: which flow the user is in. Each flow is a machine of
// its own, spawned as a child actor; the authenticator waits for it to
// finish.
//
// Written for XState v4 and not yet migrated (see MIGRATION.md): v4's
// `cond`, `(context, event)` implementations and `done.invoke.<id>`
// completions. The package runs on v5, where `spawn` is no import any
// more but the assigner's argument, so that one line is v5's already.
import { assign, createMachine, type ActorRefFrom } from 'xstate';
import { signInMachine } from './signIn.machine';
import { signUpMachine } from './signUp.machine';

export interface AuthenticatorContext {
  actorRef: ActorRefFrom<typeof signInMachine> | ActorRefFrom<typeof signUpMachine> | null;
  loginMechanisms: Array<'email' | 'phone_number'>;
  socialProviders: string[];
  user: { username: string } | null;
}

export type AuthenticatorEvent =
  | { type: 'INIT'; loginMechanisms?: Array<'email' | 'phone_number'>; socialProviders?: string[] }
  | { type: 'SIGN_IN' }
  | { type: 'SIGN_UP' }
  | { type: 'SIGN_OUT' }
  | { type: 'done.invoke.signInActor'; data: { username: string } }
  | { type: 'done.invoke.signUpActor'; data: { username: string } };

export const authenticatorMachine = createMachine<AuthenticatorContext, AuthenticatorEvent>(
  {
    id: 'authenticator',
    predictableActionArguments: true,
    initial: 'idle',
    context: {
      actorRef: null,
      loginMechanisms: ['email'],
      socialProviders: [],
      user: null,
    },
    states: {
      idle: {
        on: {
          INIT: {
            target: 'signIn',
            actions: 'applyAmplifyConfig',
          },
        },
      },
      signIn: {
        entry: 'spawnSignInActor',
        exit: 'stopActor',
        on: {
          'done.invoke.signInActor': {
            target: 'authenticated',
            actions: 'setUser',
          },
          SIGN_UP: 'signUp',
        },
      },
      signUp: {
        entry: 'spawnSignUpActor',
        exit: 'stopActor',
        on: {
          'done.invoke.signUpActor': [
            { target: 'signIn', cond: 'shouldSignInAfterSignUp' },
            { target: 'authenticated', actions: 'setUser' },
          ],
          SIGN_IN: 'signIn',
        },
      },
      authenticated: {
        initial: 'syncing',
        states: {
          syncing: {
            invoke: {
              id: 'send syn',
              src: 'syncDevices',
              onDone: 'ready',
              onError: 'ready',
            },
          },
          // `ready` is final so that `authenticated` is done for whoever
          // waits on it, and stays active: the session is kept fresh for
          // as long as the user is signed in.
          ready: {
            type: 'final',
            invoke: { id: 'keep session fresh', src: 'refreshSession' },
          },
        },
        on: { SIGN_OUT: 'signOut' },
      },
      signOut: {
        entry: 'clearUser',
        always: 'signIn',
      },
    },
  },
  {
    actions: {
      applyAmplifyConfig: assign((context, event) => ({
        loginMechanisms: event.loginMechanisms ?? context.loginMechanisms,
        socialProviders: event.socialProviders ?? context.socialProviders,
      })),
      spawnSignInActor: assign({
        actorRef: ({ spawn }) => spawn(signInMachine, 'signInActor'),
      }),
      spawnSignUpActor: assign({
        actorRef: ({ spawn }) => spawn(signUpMachine, 'signUpActor'),
      }),
      stopActor: (context) => context.actorRef?.stop?.(),
      setUser: assign({ user: (_, event) => event.data }),
      clearUser: assign({ user: null }),
    },
    guards: {
      shouldSignInAfterSignUp: (_, event) => !event.data,
    },
  },
);
