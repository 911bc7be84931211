import { useMachine } from '@xstate/react';
import { signInMachine } from '../machines/signIn.machine';

export function SignInForm({ onSignedIn }: { onSignedIn: (session: unknown) => void }) {
  const [state, send] = useMachine(signInMachine);

  if (state.matches('signedIn')) {
    onSignedIn(state.context.session);
    return null;
  }

  if (state.matches('confirmSignIn')) {
    return (
      <form
        onSubmit={(e) => {
          e.preventDefault();
          const code = new FormData(e.currentTarget).get('code') as string;
          send({ type: 'SUBMIT_CODE', code });
        }}
      >
        <input name="code" autoComplete="one-time-code" inputMode="numeric" />
        <button type="submit">Verify</button>
        <button type="button" onClick={() => send({ type: 'BACK' })}>
          Back to sign in
        </button>
      </form>
    );
  }

  return (
    <form
      onSubmit={(e) => {
        e.preventDefault();
        const data = new FormData(e.currentTarget);
        send({
          type: 'SUBMIT',
          username: data.get('username') as string,
          password: data.get('password') as string,
        });
      }}
    >
      {state.context.error && <p role="alert">{state.context.error}</p>}
      <input name="username" autoComplete="username" />
      <input name="password" type="password" autoComplete="current-password" />
      <button type="submit" disabled={state.matches({ signIn: 'submit' })}>
        Sign in
      </button>
    </form>
  );
}
