export {
  createStorage,
  isNotFoundError,
  ObjectNotFoundError,
  type ObjectStat,
  type PutOptions,
  type Storage,
  type StorageConfig,
} from './storage';
export { conversionKey, conversionsPrefix, originalKey } from './object-keys';
