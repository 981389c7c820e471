import type { Storage } from '@dam/storage';
import type { StoredVariant, TransformVariants } from '../use-cases/transform.use-case';

/** The transform variants of an asset as the object store lists them (the folder of their cache keys). */
export function storageTransformVariants(storage: Storage): TransformVariants {
  return {
    async list(prefix) {
      const variants: StoredVariant[] = [];
      // Storage.listKeys gives names only: the age of each variant comes with the same listing.
      for await (const item of storage.client.listObjectsV2(storage.bucket, prefix, true)) {
        if (item.name) variants.push({ key: item.name, lastModified: item.lastModified ?? new Date(0) });
      }
      return variants;
    },
    async remove(keys) {
      await Promise.all(keys.map((key) => storage.remove(key)));
    },
  };
}
