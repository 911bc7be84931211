export * from './availability.machine';
export * from './reservation.machine';
export * from './waitlist.machine';
