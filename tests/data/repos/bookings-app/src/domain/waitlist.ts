export enum WaitlistStatus {
  OPEN = 'open',
  OFFERING = 'offering',
  CLOSED = 'closed',
}

/** How long a guest on the waitlist has to accept a released room. */
export const OFFER_TTL_MS = 2 * 60 * 60 * 1000;
