export * from './booking';
export * from './timing';
export * from './waitlist';
