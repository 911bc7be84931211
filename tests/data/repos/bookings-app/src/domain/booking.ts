// A booking's status, as stored in `bookings.status` and shown to staff.
export enum BookingStatus {
  CREATED = 'created',
  HELD = 'held',
  CONFIRMED = 'confirmed',
  CHECKED_IN = 'checkedIn',
  CHECKED_OUT = 'checkedOut',
  CANCELLED = 'cancelled',
  EXPIRED = 'expired',
}

export interface Booking {
  id: string;
  propertyId: string;
  roomTypeId: string;
  guestEmail: string;
  checkIn: string;
  checkOut: string;
  status: BookingStatus;
  totalCents: number;
}
