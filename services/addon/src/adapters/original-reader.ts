import { createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Storage } from '@dam/storage';
import { OriginalTooLarge, type Original } from '../domain/ports';
import type { ReadOriginal } from './originals-cache';

export { OriginalTooLarge, type Original };

export interface OriginalReaderOptions {
  /** Originals up to this size are read into memory (and kept in the cache of originals); larger ones go to a file. */
  inMemoryBytes: number;
  /** Larger originals are refused unread (the scratch volume holds CONCURRENCY of them). */
  maxBytes: number;
  /** Where the files go: the pod's scratch volume (the system's temporary folder by default). */
  dir?: string;
}

const MiB = 1024 * 1024;
const sizeOf = (bytes: number): string => (bytes >= MiB ? `${Math.round((bytes / MiB) * 10) / 10} MiB` : `${bytes} bytes`);

/**
 * The original of a job, read without holding a large one whole in memory: small ones come from `cached` (one read
 * of the object store for the addons of one asset), larger ones are streamed to a file of their own.
 */
export function originalReader(storage: Pick<Storage, 'stat' | 'getStream'>, cached: ReadOriginal, options: OriginalReaderOptions) {
  return async (objectKey: string, checksum: string): Promise<Original> => {
    const size = (await storage.stat(objectKey))?.size;
    // A missing object fails in the read, as before (the job is retried: it may not be there yet).
    if (size === undefined || size <= options.inMemoryBytes) return { input: await cached(objectKey, checksum), release: async () => undefined };
    if (size > options.maxBytes) throw new OriginalTooLarge(`the original is ${sizeOf(size)}, above the ${sizeOf(options.maxBytes)} an addon reads`);
    const dir = await mkdtemp(path.join(options.dir ?? tmpdir(), 'dam-addon-'));
    const release = () => rm(dir, { recursive: true, force: true });
    try {
      const file = path.join(dir, 'original');
      await pipeline(await storage.getStream(objectKey), createWriteStream(file));
      return { input: file, release };
    } catch (error) {
      await release();
      throw error;
    }
  };
}
