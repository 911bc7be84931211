// The booking events, as the API sends them (shared with the web client).
export type BookingEvent =
  | { type: 'SELECT_ROOM'; roomId: string; nights: number }
  | { type: 'PAY_DEPOSIT'; paymentId: string; amount: number }
  | { type: 'CONFIRM'; bookingRef: string }
  | { type: 'CANCEL'; reason?: string };
