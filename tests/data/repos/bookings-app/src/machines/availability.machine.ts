// The availability search of the booking widget: debounced while the guest
// types, one request at a time, the latest answer shown.
import { assign, fromPromise, setup } from 'xstate';
import { idleStates } from '@bookings/flow';
import { SEARCH_DEBOUNCE_MS } from '@bookings/domain';
import { searchAvailability, type RoomOffer } from '../api/availability';

type SearchParams = { propertyId: string; checkIn: string; checkOut: string; guests: number };

export type AvailabilityEvent =
  | ({ type: 'SEARCH' } & SearchParams)
  | { type: 'SELECT'; roomTypeId: string }
  | { type: 'RESET' };

export const availabilityMachine = setup({
  types: {
    context: {} as { params: SearchParams | null; offers: RoomOffer[]; selected: string | null },
    events: {} as AvailabilityEvent,
  },
  actors: {
    search: fromPromise(({ input }: { input: SearchParams }) => searchAvailability(input)),
  },
}).createMachine({
  id: 'availability',
  initial: 'idle',
  context: { params: null, offers: [], selected: null },
  states: {
    ...idleStates,
    debouncing: {
      entry: assign({
        params: ({ event }) => {
          const { type, ...params } = event as Extract<AvailabilityEvent, { type: 'SEARCH' }>;
          return params;
        },
      }),
      after: { [SEARCH_DEBOUNCE_MS]: 'searching' },
      on: { SEARCH: { target: 'debouncing', reenter: true } },
    },
    searching: {
      invoke: {
        id: 'search availability',
        src: 'search',
        input: ({ context }) => context.params!,
        onDone: {
          target: 'results',
          actions: assign({ offers: ({ event }) => event.output }),
        },
        onError: 'unavailable',
      },
      on: { SEARCH: 'debouncing' },
    },
    results: {
      on: {
        SELECT: { actions: assign({ selected: ({ event }) => event.roomTypeId }) },
        SEARCH: 'debouncing',
        RESET: { target: 'idle', actions: assign({ offers: [], selected: null }) },
      },
    },
    unavailable: {
      on: { SEARCH: 'debouncing', RESET: 'idle' },
    },
  },
});
