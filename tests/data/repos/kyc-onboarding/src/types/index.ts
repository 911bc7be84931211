// The types the API and the web client share.
export * from './booking';
