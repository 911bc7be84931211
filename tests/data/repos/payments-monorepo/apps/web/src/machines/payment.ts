// A card payment with 3-D Secure: authorise, challenge the cardholder when
// the issuer asks, then capture.
import { createMachine } from 'xstate';

export const paymentMachine = createMachine({
  id: 'payment',
  initial: 'authorising',
  states: {
    authorising: {
      on: {
        AUTHORISED: 'capturing',
        CHALLENGE_REQUIRED: 'challenging',
        DECLINED: 'declined',
      },
    },
    challenging: {
      on: {
        CHALLENGE_PASSED: 'capturing',
        CHALLENGE_FAILED: 'declined',
      },
      after: { 600000: 'declined' },
    },
    capturing: {
      on: { CAPTURED: 'captured', CAPTURE_FAILED: 'declined' },
    },
    captured: { type: 'final' },
    declined: { type: 'final' },
  },
});
