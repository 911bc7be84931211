// Room bookings for onboarding events (XState v5, `types` on the config).
// A deposit counts towards the booking only when it covers what is due.
// The events' type comes from the shared types, through the `@app/*` alias.
import { assign, createMachine } from 'xstate';
import { type BookingEvent } from '@app/types';

interface BookingContext {
  roomId: string | null;
  nights: number;
  depositDue: number;
  paid: number;
}

export const bookingMachine = createMachine({
  id: 'booking',
  types: {} as { context: BookingContext; events: BookingEvent },
  initial: 'selecting',
  context: { roomId: null, nights: 0, depositDue: 150, paid: 0 },
  states: {
    selecting: {
      on: {
        SELECT_ROOM: {
          target: 'awaitingDeposit',
          actions: assign({
            roomId: ({ event }) => event.roomId,
            nights: ({ event }) => event.nights,
          }),
        },
      },
    },
    awaitingDeposit: {
      on: {
        PAY_DEPOSIT: {
          guard: ({ context, event }) => event.amount >= context.depositDue,
          actions: assign({ paid: ({ context, event }) => context.paid + event.amount }),
        },
        CONFIRM: { target: 'confirmed', guard: ({ context }) => context.paid > 0 },
        CANCEL: 'cancelled',
      },
    },
    confirmed: { type: 'final' },
    cancelled: { type: 'final' },
  },
});
