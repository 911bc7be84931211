import { createMachine } from 'xstate';

// Loads as XState, but names a state that does not exist.
export const door = createMachine({
  id: 'door',
  initial: 'closed',
  states: {
    closed: { on: { OPEN: 'opend' } },
    opened: {},
  },
});
