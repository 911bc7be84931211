// Types the build injects; no machine lives here.
import type { AnyStateMachine } from 'xstate';

declare global {
  interface Window {
    /** The checkout machine, exposed to the inspector in development. */
    __checkoutMachine?: AnyStateMachine;
  }
}

declare module '*.svg' {
  const url: string;
  export default url;
}

export {};
