import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { TransformParams } from '@dam/internal-api';
import type { Logger } from '@dam/logging';
import type { Storage } from '@dam/storage';
import type { ImageProcessor } from '../adapters/image-processor';
import { outputFormat } from '../domain/conversion-spec';
import { UnprocessableImageError } from '../domain/conversion.errors';
import { outputSize } from '../domain/output-size';

export interface TransformDeps {
  logger: Logger;
  storage: Storage;
  images: ImageProcessor;
  maxOutputPixels: number;
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
 */
export function transformer(deps: TransformDeps) {
  const inFlight = new Map<string, Promise<Transformed>>();

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
      if (expected.width * expected.height > deps.maxOutputPixels) {
        throw new UnprocessableImageError(`the result would be ${expected.width}x${expected.height}, over ${deps.maxOutputPixels} pixels`);
      }
      const target = path.join(dir, `out.${outputFormat(params.format).ext}`);
      const produced = await deps.images.convert(source, { key: 'transform', ...box, format: params.format, quality: params.q ?? 80 }, target, image.pages);
      await deps.storage.putStream(cacheKey, createReadStream(target), { contentType, size: produced.size });
      deps.logger.info({ cache_key: cacheKey, width: produced.width, height: produced.height, size: produced.size }, 'transform made');
      return { object_key: cacheKey, content_type: contentType, size: produced.size, made: true };
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  };

  return (sourceKey: string, cacheKey: string, params: TransformParams): Promise<Transformed> => {
    const running = inFlight.get(cacheKey);
    if (running) return running.then((t) => ({ ...t, made: false }));
    const started = make(sourceKey, cacheKey, params).finally(() => inFlight.delete(cacheKey));
    inFlight.set(cacheKey, started);
    return started;
  };
}
