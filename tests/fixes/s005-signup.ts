import { createMachine } from 'xstate';

// No facts yet: the fix writes the whole `meta.idemchart.events`.
export default createMachine({
  id: 'signup',
  initial: 'form',
  states: {
    form: { on: { SUBMIT: 'verifying' } },
    verifying: { on: { VERIFIED: 'done', REJECTED: 'form' } },
    done: { type: 'final' }
  }
});
