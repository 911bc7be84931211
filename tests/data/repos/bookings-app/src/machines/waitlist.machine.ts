// The waitlist of a sold-out night: guests join from the booking widget
// (a retried request joins once), and a released room is offered to the
// first of them for two hours; unclaimed, it goes back on sale and the
// list closes.
import { assign, setup } from 'xstate';
import { OFFER_TTL_MS, WaitlistStatus } from '@bookings/domain';

export type WaitlistEvent =
  | { type: 'JOINED'; guestId: string }
  | { type: 'ROOM_RELEASED'; roomId: string }
  | { type: 'OFFER_ACCEPTED'; guestId: string }
  | { type: 'NIGHT_PASSED' };

export const waitlistMachine = setup({
  types: {
    context: {} as { guestIds: string[]; offeredTo: string | null },
    events: {} as WaitlistEvent,
  },
  guards: {
    isNewGuest: ({ context, event }) =>
      !context.guestIds.includes((event as { guestId: string }).guestId),
    isOfferedGuest: ({ context, event }) =>
      context.offeredTo === (event as { guestId: string }).guestId,
  },
}).createMachine({
  id: 'waitlist',
  initial: WaitlistStatus.OPEN,
  context: { guestIds: [], offeredTo: null },
  on: {
    JOINED: {
      guard: 'isNewGuest',
      actions: assign({ guestIds: ({ context, event }) => [...context.guestIds, event.guestId] }),
    },
    NIGHT_PASSED: `.${WaitlistStatus.CLOSED}`,
  },
  states: {
    [WaitlistStatus.OPEN]: {
      on: {
        ROOM_RELEASED: {
          target: WaitlistStatus.OFFERING,
          actions: assign({ offeredTo: ({ context }) => context.guestIds[0] ?? null }),
        },
      },
    },
    [WaitlistStatus.OFFERING]: {
      after: { [OFFER_TTL_MS]: WaitlistStatus.CLOSED },
      on: {
        OFFER_ACCEPTED: { target: WaitlistStatus.CLOSED, guard: 'isOfferedGuest' },
      },
    },
    [WaitlistStatus.CLOSED]: { type: 'final' },
  },
});
