// States that several machines begin with: waiting for the first input,
// and going back there on RESET.
export const idleStates = {
  idle: {
    on: {
      SEARCH: 'debouncing',
    },
  },
};
