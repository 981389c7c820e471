import { LRUCache } from 'lru-cache';

/** Reads an original's bytes by its object key and the checksum of those bytes. */
export type ReadOriginal = (objectKey: string, checksum: string) => Promise<Buffer>;

export interface OriginalsCacheOptions {
  /** All kept originals together stay within this (0: nothing is kept, every job reads the object store). */
  maxBytes: number;
  /** A kept original is read again after this long (nor are a deleted asset's bytes held on to for long). */
  ttlMs: number;
}

/**
 * The originals the addons analyse, kept in memory for a short while: the addons of one asset (the automatic ones
 * after an upload, two of them at once; a run again) read it from the object store once. An entry is the object key
 * with the checksum of its bytes, so a replaced original is another entry. While one read of an original is under
 * way, another job asking for it waits for that read; a failed read is not kept. An original larger than a quarter of
 * the cache is not kept either (one large image must not empty it); the least recently used go first.
 */
export function cachedOriginals(read: (objectKey: string) => Promise<Buffer>, options: OriginalsCacheOptions): ReadOriginal {
  if (options.maxBytes <= 0) return (objectKey) => read(objectKey);
  const cache = new LRUCache<string, Buffer, string>({
    maxSize: options.maxBytes,
    maxEntrySize: Math.floor(options.maxBytes / 4),
    sizeCalculation: (bytes) => Math.max(1, bytes.length),
    ttl: options.ttlMs,
    // The object key rides as the fetch's context: the cache's key also names the checksum.
    fetchMethod: (_entry, _stale, { context }) => read(context),
  });
  return async (objectKey, checksum) => {
    const bytes = await cache.fetch(`${checksum}:${objectKey}`, { context: objectKey });
    // fetch() resolves undefined only for a fetch it aborted, which nothing here does.
    if (!bytes) throw new Error(`the original ${objectKey} could not be read`);
    return bytes;
  };
}
