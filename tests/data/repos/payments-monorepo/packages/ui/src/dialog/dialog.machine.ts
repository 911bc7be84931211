// A modal dialog, in Zag's machine format.
import { createMachine, guards } from '@zag-js/core';

const { and } = guards;

export function createDialogMachine(ctx: { id: string; modal?: boolean }) {
  return createMachine({
    id: 'dialog',
    initial: 'closed',
    context: { modal: true, ...ctx },
    states: {
      open: {
        entry: ['checkRenderedElements', 'trapFocus'],
        on: { CLOSE: { target: 'closed', guard: and('isModal'), actions: 'invokeOnClose' } },
      },
      closed: {
        on: { OPEN: 'open' },
      },
    },
  });
}
