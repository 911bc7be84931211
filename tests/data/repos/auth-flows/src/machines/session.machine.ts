// The signed-in session: its tokens refreshed well before they expire
// (the provider issues them for an hour), for as long as the user stays
// signed in.
import { assign, fromPromise, setup } from 'xstate';
import { identity, type Session } from '../api/identity';

const REFRESH_EVERY_MS = 50 * 60 * 1000;

export const sessionMachine = setup({
  types: {
    context: {} as { session: Session | null },
    input: {} as { session: Session | null },
    events: {} as { type: 'SIGN_OUT' },
  },
  actors: {
    refresh: fromPromise(({ input }: { input: { refreshToken: string } }) =>
      identity.refreshSession(input.refreshToken),
    ),
  },
}).createMachine({
  id: 'session',
  context: ({ input }) => ({ session: input?.session ?? null }),
  initial: 'active',
  states: {
    active: {
      after: { [REFRESH_EVERY_MS]: 'refreshing' },
      on: { SIGN_OUT: 'signedOut' },
    },
    refreshing: {
      invoke: {
        id: 'refresh tokens',
        src: 'refresh',
        input: ({ context }) => ({ refreshToken: context.session?.refreshToken ?? '' }),
        onDone: {
          target: 'active',
          actions: assign({ session: ({ event }) => event.output }),
        },
        onError: 'expired',
      },
      on: { SIGN_OUT: 'signedOut' },
    },
    expired: { type: 'final' },
    signedOut: { type: 'final' },
  },
});
