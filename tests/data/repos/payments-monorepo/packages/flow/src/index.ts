// XState for every app of the repository, and the helpers they share.
export { assign, createMachine, fromPromise, setup } from 'xstate';
export * from './retry';
