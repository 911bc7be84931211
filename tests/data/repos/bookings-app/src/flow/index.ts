export * from './idle';
