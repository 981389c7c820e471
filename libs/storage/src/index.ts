export {
  createStorage,
  publicPrefixPolicy,
  type CopyOptions,
  isNotFoundError,
  ObjectNotFoundError,
  s3EndpointProblem,
  type ObjectStat,
  type PresignOptions,
  type PutOptions,
  type Storage,
  type S3EnvConfig,
  type StorageConfig,
  storageConfigFromEnv,
} from './storage';
export {
  contentTypeOfFile,
  conversionKey,
  conversionsPrefix,
  isOwnOriginalKey,
  originalKey,
  PUBLIC_PREFIX,
  publicCopyPrefix,
  replacementKey,
} from './object-keys';
export { storeOriginal, type ByteBudget, type StoredOriginal } from './stream-writer';
export { HEAD_BYTES, imageMetadata, sniffContentType, textType } from './content-sniffer';
