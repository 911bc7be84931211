export * from './authenticator.machine';
export * from './signIn.machine';
export * from './signUp.machine';
export * from './mfaSetup.machine';
export * from './session.machine';
