export { internalClient, type CallError, type CallOptions, type CallResult, type InternalClient, type InternalClientOptions } from './client';
export * from './schemas';
