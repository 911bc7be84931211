// A reservation from the hold to the guest's departure. Events come from
// the booking API (HOLD, CANCEL), from the property management system
// (GUEST_CHECKED_IN, EXTRAS_POSTED, GUEST_CHECKED_OUT) and from Stripe's
// webhooks, which are delivered at least once.
import { assign, fromPromise, setup } from 'xstate';
import { BookingStatus, HOLD_TTL_MS, RETRY_DELAY_MS } from '@bookings/domain';
import { capturePayment, chargeExtras, createPaymentIntent } from '@bookings/payments/stripe';

export interface ReservationContext {
  bookingId: string;
  customerId: string | null;
  totalCents: number;
  paymentIntentId: string | null;
  extrasCents: number;
  refunds: string[];
  captureAttempts: number;
}

export type ReservationEvent =
  | { type: 'HOLD'; bookingId: string; customerId: string; totalCents: number }
  | { type: 'PAYMENT_AUTHORISED'; paymentIntentId: string }
  | { type: 'GUEST_CHECKED_IN'; roomNumber: string }
  | { type: 'EXTRAS_POSTED'; folioLineId: string; amountCents: number }
  | { type: 'GUEST_CHECKED_OUT' }
  | { type: 'REFUNDED'; refundId: string; amountCents: number }
  | { type: 'CANCEL'; reason: string };

const MAX_CAPTURE_ATTEMPTS = 3;

export const reservationMachine = setup({
  types: {
    context: {} as ReservationContext,
    events: {} as ReservationEvent,
  },
  actors: {
    createPaymentIntent: fromPromise(
      ({ input }: { input: { bookingId: string; totalCents: number } }) =>
        createPaymentIntent(input.bookingId, input.totalCents),
    ),
    capturePayment: fromPromise(({ input }: { input: { paymentIntentId: string | null } }) =>
      capturePayment(input.paymentIntentId ?? ''),
    ),
    chargeExtras: fromPromise(
      ({ input }: { input: { customerId: string | null; extrasCents: number } }) =>
        chargeExtras(input.customerId ?? '', input.extrasCents, 'Extras at check-out'),
    ),
  },
  guards: {
    canRetryCapture: ({ context }) => context.captureAttempts < MAX_CAPTURE_ATTEMPTS,
    hasExtras: ({ context }) => context.extrasCents > 0,
  },
}).createMachine({
  id: 'reservation',
  initial: BookingStatus.CREATED,
  context: {
    bookingId: '',
    customerId: null,
    totalCents: 0,
    paymentIntentId: null,
    extrasCents: 0,
    refunds: [],
    captureAttempts: 0,
  },
  states: {
    [BookingStatus.CREATED]: {
      on: {
        HOLD: {
          target: BookingStatus.HELD,
          actions: assign({
            bookingId: ({ event }) => event.bookingId,
            customerId: ({ event }) => event.customerId,
            totalCents: ({ event }) => event.totalCents,
          }),
        },
      },
    },
    [BookingStatus.HELD]: {
      invoke: {
        id: 'create payment intent',
        src: 'createPaymentIntent',
        input: ({ context }) => ({ bookingId: context.bookingId, totalCents: context.totalCents }),
      },
      after: {
        [HOLD_TTL_MS]: BookingStatus.EXPIRED,
      },
      on: {
        PAYMENT_AUTHORISED: {
          target: BookingStatus.CONFIRMED,
          actions: assign({ paymentIntentId: ({ event }) => event.paymentIntentId }),
        },
        CANCEL: BookingStatus.CANCELLED,
      },
    },
    [BookingStatus.CONFIRMED]: {
      initial: 'awaitingArrival',
      states: {
        awaitingArrival: {
          on: { GUEST_CHECKED_IN: 'capturing' },
        },
        capturing: {
          entry: assign({ captureAttempts: ({ context }) => context.captureAttempts + 1 }),
          invoke: {
            id: 'capture payment',
            src: 'capturePayment',
            input: ({ context }) => ({ paymentIntentId: context.paymentIntentId }),
            onDone: `#reservation.${BookingStatus.CHECKED_IN}`,
            onError: 'captureFailed',
          },
        },
        captureFailed: {
          after: {
            [RETRY_DELAY_MS]: [
              { target: 'capturing', guard: 'canRetryCapture' },
              { target: `#reservation.${BookingStatus.CANCELLED}` },
            ],
          },
        },
      },
      on: {
        CANCEL: BookingStatus.CANCELLED,
      },
    },
    [BookingStatus.CHECKED_IN]: {
      on: {
        EXTRAS_POSTED: {
          actions: assign({
            extrasCents: ({ context, event }) => context.extrasCents + event.amountCents,
          }),
        },
        GUEST_CHECKED_OUT: [
          { target: 'chargingExtras', guard: 'hasExtras' },
          { target: BookingStatus.CHECKED_OUT },
        ],
      },
    },
    chargingExtras: {
      invoke: {
        id: 'charge extras',
        src: 'chargeExtras',
        input: ({ context }) => ({
          customerId: context.customerId,
          extrasCents: context.extrasCents,
        }),
        onDone: BookingStatus.CHECKED_OUT,
        onError: BookingStatus.CHECKED_IN,
      },
    },
    [BookingStatus.CHECKED_OUT]: {
      on: {
        REFUNDED: {
          actions: assign({ refunds: ({ context, event }) => [...context.refunds, event.refundId] }),
        },
      },
    },
    [BookingStatus.CANCELLED]: { type: 'final' },
    [BookingStatus.EXPIRED]: { type: 'final' },
  },
});
