// Room bookings for onboarding events (XState v5, `types` on the config).
// A deposit counts towards the booking only when it covers what is due.
import { assign, createMachine } from 'xstate';

interface BookingContext {
  roomId: string | null;
  nights: number;
  depositDue: number;
  paid: number;
}

type BookingEvent =
  | { type: 'SELECT_ROOM'; roomId: string; nights: number }
  | { type: 'PAY_DEPOSIT'; paymentId: string; amount: number }
  | { type: 'CONFIRM'; bookingRef: string }
  | { type: 'CANCEL'; reason?: string };

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
