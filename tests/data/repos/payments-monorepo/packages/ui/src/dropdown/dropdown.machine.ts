// A dropdown's state machine, in Zag's own machine format (not XState's).
import { createMachine } from '@zag-js/core';

export function createDropdownMachine(ctx: { id: string }) {
  return createMachine({
    id: 'dropdown',
    initial: 'closed',
    context: { highlighted: null, ...ctx },
    states: {
      closed: {
        on: { TRIGGER_CLICK: { target: 'open', actions: ['focusMenu'] } },
      },
      open: {
        on: {
          ITEM_CLICK: { target: 'closed', actions: ['selectItem', 'invokeOnSelect'] },
          ESCAPE: 'closed',
          ARROW_DOWN: { actions: 'highlightNext' },
        },
      },
    },
  });
}
