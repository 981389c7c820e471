import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { TransformParams } from '@dam/internal-api';
import type { Logger } from '@dam/logging';
import type { Storage } from '@dam/storage';
import { outputFormat, outputFrames } from '../domain/conversion-spec';
import { UnprocessableImageError } from '../domain/conversion.errors';
import { outputSize } from '../domain/output-size';
import type { ImageEngine } from '../domain/ports';
import { transformSlots, type SlotLimits } from './transform-slots';

export interface StoredVariant {
  key: string;
  lastModified: Date;
}

/** The transforms stored for one asset: the objects under the folder of its cache keys. */
export interface TransformVariants {
  list(prefix: string): Promise<StoredVariant[]>;
  remove(keys: readonly string[]): Promise<void>;
}

export interface TransformLimits extends SlotLimits {
  /** Output pixels of one transform, every frame of an animation counted. */
  maxOutputPixels: number;
  /** Transforms kept stored per asset: making one more evicts the oldest. */
  maxVariants: number;
}

export interface TransformDeps {
  logger: Logger;
  storage: Storage;
  variants: TransformVariants;
  images: ImageEngine;
  limits: TransformLimits;
  workDir?: string;
}

export interface Transformed {
  object_key: string;
  content_type: string;
  size: number;
  made: boolean;
}

/**
 * On-demand transforms (CONTRACT §5): the result is stored at `cacheKey` (under the source's checksum, so a
 * replace or delete removes it with the outputs) and read from there by metadata. Identical requests arriving
 * while one is being made wait for it: one transform, not many.
 *
 * Any reader chooses the size, format and quality, so each of these is bounded here: the output's pixels over all
 * its frames, the transforms running at once (more wait a bounded time in a bounded queue, then are refused with a
 * retry time), and the variants kept per asset (the oldest are evicted, so a reader cannot grow storage by asking
 * for new sizes).
 */
export function transformer(deps: TransformDeps) {
  const { limits } = deps;
  const slots = transformSlots(limits);
  /** Per cache key, the transform being made or waiting for a slot, and how many callers still want it. */
  const inFlight = new Map<string, { result: Promise<Transformed>; callers: number; leave: () => boolean }>();

  const make = async (sourceKey: string, cacheKey: string, params: TransformParams): Promise<Transformed> => {
    const { contentType } = outputFormat(params.format);
    const cached = await deps.storage.stat(cacheKey);
    if (cached) return { object_key: cacheKey, content_type: contentType, size: cached.size, made: false };
    const dir = await mkdtemp(path.join(deps.workDir ?? tmpdir(), 'dam-transform-'));
    try {
      const source = path.join(dir, 'source');
      await pipeline(await deps.storage.getStream(sourceKey), createWriteStream(source));
      const image = await deps.images.probe(source);
      const box = { width: params.w ?? null, height: params.h ?? null, fit: params.fit ?? 'inside' };
      const expected = outputSize(image, box);
      // An animated original becomes an animated WebP of every frame at the asked size: the work and the result
      // grow with the frames, so the limit counts them all (70 frames of 1024x1024 are 73 MP, not 1 MP).
      const frames = outputFrames({ format: params.format }, image.pages);
      if (expected.width * expected.height * frames > limits.maxOutputPixels) {
        const size = `${expected.width}x${expected.height}${frames > 1 ? ` x ${frames} frames` : ''}`;
        throw new UnprocessableImageError(`the result would be ${size}, over ${limits.maxOutputPixels} pixels`);
      }
      const target = path.join(dir, `out.${outputFormat(params.format).ext}`);
      const produced = await deps.images.convert(source, { key: 'transform', ...box, format: params.format, quality: params.q ?? 80 }, target, image.pages);
      await deps.storage.putStream(cacheKey, createReadStream(target), { contentType, size: produced.size });
      deps.logger.info({ cache_key: cacheKey, width: produced.width, height: produced.height, frames, size: produced.size }, 'transform made');
      await evictOldVariants(cacheKey);
      return { object_key: cacheKey, content_type: contentType, size: produced.size, made: true };
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  };

  /**
   * Keeps the newest `maxVariants` of the asset's transforms, the one just made always among them. Trimming after
   * each store (rather than counting before) keeps the bound with several replicas storing at once: whichever
   * trims last sees them all. Evicting, not refusing to store, keeps the cache serving what is asked now, and a
   * variant asked again is made again. A failed eviction leaves the extra for the next store to trim.
   */
  const evictOldVariants = async (cacheKey: string): Promise<void> => {
    const prefix = cacheKey.slice(0, cacheKey.lastIndexOf('/') + 1);
    try {
      const variants = await deps.variants.list(prefix);
      const excess = variants.length - limits.maxVariants;
      if (excess <= 0) return;
      const evicted = variants
        .filter((v) => v.key !== cacheKey)
        .sort((a, b) => a.lastModified.getTime() - b.lastModified.getTime() || a.key.localeCompare(b.key))
        .slice(0, excess)
        .map((v) => v.key);
      await deps.variants.remove(evicted);
      deps.logger.info({ prefix, evicted: evicted.length, kept: limits.maxVariants }, 'old transforms evicted');
    } catch (error) {
      deps.logger.warn({ err: error, prefix }, 'old transforms not evicted: the next transform of this asset trims them');
    }
  };

  /**
   * `gone` is the caller's request going away: while still queued it stops waiting, and once every caller of that
   * variant has gone the queued transform leaves the queue and never takes a slot. One already running is finished
   * (it is stored for the next reader).
   */
  return (sourceKey: string, cacheKey: string, params: TransformParams, gone?: AbortSignal): Promise<Transformed> => {
    if (gone?.aborted) return Promise.reject(gone.reason as Error);
    let entry = inFlight.get(cacheKey);
    const joined = entry !== undefined;
    if (!entry) {
      const slot = slots.request();
      const created = {
        result: slot.taken
          .then(() => make(sourceKey, cacheKey, params).finally(slots.release))
          .finally(() => {
            if (inFlight.get(cacheKey) === created) inFlight.delete(cacheKey);
          }),
        callers: 0,
        leave: slot.leave,
      };
      entry = created;
      inFlight.set(cacheKey, created);
    }
    const pending = entry;
    pending.callers += 1;
    const own = joined ? pending.result.then((t) => ({ ...t, made: false })) : pending.result;
    if (!gone) return own;
    return new Promise<Transformed>((resolve, reject) => {
      const left = () => {
        pending.callers -= 1;
        if (pending.callers === 0 && pending.leave() && inFlight.get(cacheKey) === pending) inFlight.delete(cacheKey);
        reject(gone.reason as Error);
      };
      gone.addEventListener('abort', left, { once: true });
      void own.then(resolve, reject).finally(() => gone.removeEventListener('abort', left));
    });
  };
}
