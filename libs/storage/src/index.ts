export {
  createStorage,
  isNotFoundError,
  ObjectNotFoundError,
  type ObjectStat,
  type PutOptions,
  type Storage,
  type S3EnvConfig,
  type StorageConfig,
  storageConfigFromEnv,
} from './storage';
export { conversionKey, conversionsPrefix, originalKey, replacementKey } from './object-keys';
