export * from './machines';
export { identity, IdentityError } from './api/identity';
export { SignInForm } from './components/SignInForm';
