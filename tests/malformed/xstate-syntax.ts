import { createMachine } from 'xstate';

export const door = createMachine({
  initial: 'closed',
  states: {
    closed: { on: { OPEN: 'opened' }
    opened: {},
  },
});
