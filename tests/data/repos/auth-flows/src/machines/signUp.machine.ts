// Sign-up with an e-mail confirmation code. The provider sends the code
// when the account is created, and again on RESEND_CODE; each new code
// invalidates the one before it.
import { assign, fromPromise, setup } from 'xstate';
import { identity } from '../api/identity';

export interface SignUpContext {
  email: string;
  userId: string | null;
  failedAttempts: number;
  error: string | null;
}

export type SignUpEvent =
  | { type: 'SUBMIT'; email: string; password: string }
  | { type: 'RESEND_CODE' }
  | { type: 'CONFIRM'; code: string }
  | { type: 'CODE_REJECTED' };

/** After this many wrong codes the form asks the user to start over. */
const MAX_FAILED_ATTEMPTS = 5;

export const signUpMachine = setup({
  types: {
    context: {} as SignUpContext,
    events: {} as SignUpEvent,
  },
  actors: {
    createAccount: fromPromise(({ input }: { input: { email: string; password: string } }) =>
      identity.signUp(input.email, input.password),
    ),
    sendCode: fromPromise(({ input }: { input: { email: string } }) =>
      identity.sendConfirmationCode(input.email),
    ),
    confirmSignUp: fromPromise(({ input }: { input: { email: string; code: string } }) =>
      identity.confirmSignUp(input.email, input.code),
    ),
  },
  guards: {
    tooManyAttempts: ({ context }) => context.failedAttempts >= MAX_FAILED_ATTEMPTS,
  },
}).createMachine({
  id: 'signUp',
  context: { email: '', userId: null, failedAttempts: 0, error: null },
  output: ({ context }) => ({ username: context.email }),
  initial: 'form',
  states: {
    form: {
      on: {
        SUBMIT: {
          target: 'creatingAccount',
          actions: assign({ email: ({ event }) => event.email, error: null }),
        },
      },
    },
    creatingAccount: {
      invoke: {
        id: 'create account',
        src: 'createAccount',
        input: ({ event }) => event as { email: string; password: string },
        onDone: {
          target: 'awaitingCode',
          actions: assign({ userId: ({ event }) => event.output.userId }),
        },
        onError: {
          target: 'form',
          actions: assign({ error: ({ event }) => String(event.error) }),
        },
      },
    },
    awaitingCode: {
      on: {
        RESEND_CODE: 'sendingCode',
        CONFIRM: 'confirming',
      },
    },
    sendingCode: {
      invoke: {
        id: 'send code',
        src: 'sendCode',
        input: ({ context }) => ({ email: context.email }),
        onDone: 'awaitingCode',
        onError: {
          target: 'awaitingCode',
          actions: assign({ error: ({ event }) => String(event.error) }),
        },
      },
      on: {
        // The button stays enabled while the code is on its way.
        RESEND_CODE: { target: 'sendingCode', reenter: true },
      },
    },
    confirming: {
      invoke: {
        id: 'confirm sign up',
        src: 'confirmSignUp',
        input: ({ context, event }) => ({
          email: context.email,
          code: (event as { code: string }).code,
        }),
        onDone: 'confirmed',
        onError: {
          target: 'codeRejected',
          actions: assign({ failedAttempts: ({ context }) => context.failedAttempts + 1 }),
        },
      },
    },
    codeRejected: {
      always: { target: 'form', guard: 'tooManyAttempts' },
      on: {
        CONFIRM: 'confirming',
        RESEND_CODE: 'sendingCode',
      },
    },
    confirmed: { type: 'final' },
  },
});
