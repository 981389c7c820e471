export { internalClient, type CallError, type CallOptions, type CallResult, type InternalClient, type InternalClientOptions } from './client';
export * from './schemas';
export { GroupSettingsClient, groupSettingsClient, type GroupSettings, type GroupSettingsClientOptions, type SettingsChanges } from './group-settings.client';
export * from './conversion-keys';
export { parseCdnEntry, type CdnEntry } from './cdn-links';
