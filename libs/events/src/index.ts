export * from './subjects';
export * from './errors';
export { errorFields, type EventLogger } from './logger';
export * from './schemas/asset-data.schema';
export * from './schemas/deletion-payload.schema';
export * from './schemas/asset-event-envelope.schema';
export * from './schemas/asset-event.schema';
export * from './schemas/file-saved.event';
export * from './schemas/file-processed.event';
export * from './schemas/file-data-updated.event';
export * from './schemas/file-deleted.event';
export * from './schemas/file-undeleted.event';
export * from './schemas/addon-processed.event';
export * from './schemas/jobs.event';
export * from './schemas/usage.event';
export * from './schemas/notice.event';
export { UsageMeter } from './usage-meter';
export * from './schemas/data-schema.event';
export * from './schemas/collection.event';
export * from './schemas/asset-purge.event';
export * from './schemas/schema-registry';
export { addonStatusClient, serveAddonStatus, type AddonState } from './addon-status';
export { announceSettingsChanged, followSettingsChanges, settingsNoticeSubject, SETTINGS_NOTICES_SUBJECTS, type SettingsChangeFeed } from './settings-notices';
export { openServiceTokenBucket, SERVICE_TOKENS_BUCKET, type ServiceTokenBucket } from './service-token-bucket';
export {
  connectNats,
  ensureStreams,
  ELECTION_RETRY_MS,
  isTransientJetStreamError,
  retryTransient,
  natsReachable,
  natsServers,
  streamConfigs,
  streamMaxBytes,
  STREAM_BYTE_SHARES,
  STREAM_DISCARD,
  STREAMS,
  waitForStreams,
  type EnsuredStream,
  type StreamName,
  type StreamOptions,
} from './nats';
export { publishEvent, buildHeaders, type PublishOptions } from './publish';
export {
  connectionOf,
  connectionWatch,
  isJetStreamFull,
  JetStreamFullError,
  natsCall,
  NatsUnavailableError,
  RECONNECT_GRACE_MS,
  type ConnectionWatch,
  type NatsCallOptions,
} from './connection';
export {
  jetStreamShareTotal,
  KV_BUCKET_BYTE_SHARES,
  KV_BUCKETS,
  kvBucketMaxBytes,
  kvBucketOptions,
  openKvBucket,
  type KvBucketName,
  type KvBucketOptions,
  type LimitKept,
} from './kv-bucket';
export { consume, consumerWorker, DEAD_LETTER_RETRIES, type Consumer, type ConsumeOptions, type ConsumerWorker, type MessageContext } from './consume';
export {
  DEFAULT_SUBSCRIBERS,
  NATS_DURABLES,
  NATS_IDENTITIES,
  generateNatsUsers,
  inboxPrefixOf,
  isSubscriberIdentity,
  natsPermissions,
  parseSubscribers,
  publicKeyOfSeed,
  renderNatsAuthorization,
  replayConsumerName,
  type NatsIdentity,
  type ServiceIdentity,
  type SubscriberIdentity,
  type NatsUser,
  type SubjectPermissions,
} from './nats-accounts';
