// A thin client over the identity provider's REST API. Every call throws
// an `IdentityError` with the provider's error code on a non-2xx answer.

export class IdentityError extends Error {
  constructor(readonly code: string, message: string) {
    super(message);
  }
}

export interface Session {
  accessToken: string;
  refreshToken: string;
  expiresAt: number;
}

export type SignInResult =
  | { kind: 'signedIn'; session: Session }
  | { kind: 'mfaRequired'; challenge: 'SMS_MFA' | 'SOFTWARE_TOKEN_MFA'; challengeSession: string }
  | { kind: 'newPasswordRequired'; challengeSession: string };

const BASE_URL = import.meta.env.VITE_IDENTITY_URL ?? 'https://id.northwind.example';

async function call<T>(path: string, body: unknown): Promise<T> {
  const response = await fetch(`${BASE_URL}${path}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  const json = await response.json();
  if (!response.ok) throw new IdentityError(json.code ?? 'Unknown', json.message ?? response.statusText);
  return json as T;
}

export const identity = {
  signIn: (username: string, password: string) =>
    call<SignInResult>('/v1/sign-in', { username, password }),
  respondToChallenge: (challengeSession: string, code: string) =>
    call<Session>('/v1/sign-in/challenge', { challengeSession, code }),
  refreshSession: (refreshToken: string) => call<Session>('/v1/token/refresh', { refreshToken }),
  signUp: (email: string, password: string) =>
    call<{ userId: string }>('/v1/sign-up', { email, password }),
  /** Sends a new confirmation code; the provider invalidates the previous one. */
  sendConfirmationCode: (email: string) => call<void>('/v1/sign-up/code', { email }),
  confirmSignUp: (email: string, code: string) => call<void>('/v1/sign-up/confirm', { email, code }),
  associateSoftwareToken: (accessToken: string) =>
    call<{ secretCode: string }>('/v1/mfa/totp/associate', { accessToken }),
  verifySoftwareToken: (accessToken: string, code: string) =>
    call<void>('/v1/mfa/totp/verify', { accessToken, code }),
  rememberDevice: (accessToken: string, deviceKey: string) =>
    call<void>('/v1/devices/remember', { accessToken, deviceKey }),
};
