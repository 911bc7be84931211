import { createMachine } from 'xstate';

// Facts declared (so the repository opts in), but no events yet: the fix
// writes the whole `meta.idemchart.events`.
export default createMachine({
  id: 'signup',
  meta: { idemchart: { dedup: { retention: '7d' } } },
  initial: 'form',
  states: {
    form: { on: { SUBMIT: 'verifying' } },
    verifying: { on: { VERIFIED: 'done', REJECTED: 'form' } },
    done: { type: 'final' }
  }
});
