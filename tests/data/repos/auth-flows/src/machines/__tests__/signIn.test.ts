import { createActor, fromPromise, waitFor } from 'xstate';
import { describe, expect, it } from 'vitest';
import { signInMachine } from '../signIn.machine';

describe('signInMachine', () => {
  it('asks for the code when the provider wants MFA', async () => {
    const actor = createActor(
      signInMachine.provide({
        actors: {
          signIn: fromPromise(async () => ({
            kind: 'mfaRequired' as const,
            challenge: 'SMS_MFA' as const,
            challengeSession: 's-1',
          })),
        },
      }),
    ).start();
    actor.send({ type: 'SUBMIT', username: 'ana', password: 'correct horse' });
    await waitFor(actor, (s) => s.matches('confirmSignIn'));
    expect(actor.getSnapshot().context.challengeSession).toBe('s-1');
  });
});
