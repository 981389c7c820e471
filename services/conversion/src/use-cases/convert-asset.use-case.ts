import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { CompletedConversion, JobOutputs, JobSettings } from '@dam/events';
import type { Logger } from '@dam/logging';
import { conversionKey, conversionsPrefix, isOwnOriginalKey, originalKey, type Storage } from '@dam/storage';
import type { GroupSettingsClient } from '@dam/internal-api';
import {
  DEEPZOOM_KEY,
  HASH_BOX,
  DEEPZOOM_OVERLAP,
  DEEPZOOM_TILE,
  outputFormat,
  planConversions,
  smartImagingSpec,
  type ConversionSpec,
  type ImageSettings,
} from '../domain/conversion-spec';
import { UnprocessableImageError } from '../domain/conversion.errors';
import { boxForScaled, outputSize, sharedDecodeSize, type Size } from '../domain/output-size';
import type { DescribeImage, ImageEngine, ImageInput } from '../domain/ports';

export interface ConvertAssetInput {
  groupId: string;
  assetId: string;
  checksum: string;
  /** Where the original is (a replaced one is not at the first original key); default `originalKey`. */
  sourceKey?: string;
  /** The group's settings as the job was opened with them; absent (a job of the previous release): read from auth. */
  settings?: JobSettings;
}

export interface ConvertAssetDeps {
  /** The group's settings, for a job that does not carry them (opened by the previous release). */
  settings: GroupSettingsClient;
  storage: Storage;
  images: ImageEngine;
  /** An image's metadata (ColorMode, EXIF, hashes), read while it is converted. */
  describe: DescribeImage;
  logger: Logger;
  /** Largest output accepted, in pixels (an `outside` fit or one-sided box on a panorama can explode). */
  maxOutputPixels: number;
  /** Where a large original is spooled while it is converted. */
  workDir?: string;
  /** Originals up to this size are held in memory (default IN_MEMORY_MAX_BYTES). */
  inMemoryMaxBytes?: number;
}

/** Originals up to this size are converted from memory; larger ones from a file, which libvips streams. */
export const IN_MEMORY_MAX_BYTES = 32 * 1024 * 1024;

/**
 * The original's bytes in memory when they are at most `maxMemory`, else spooled to `file` (what came so far,
 * then the rest of the stream): a small original costs no disk round trip, a large one no memory.
 */
export async function fetchOriginal(stream: Readable, file: string, maxMemory: number): Promise<ImageInput> {
  const chunks: Buffer[] = [];
  let size = 0;
  const it = stream[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  for (;;) {
    const next = await it.next();
    if (next.done) return Buffer.concat(chunks, size);
    chunks.push(next.value);
    size += next.value.length;
    if (size > maxMemory) {
      await pipeline(async function* () {
        yield* chunks.splice(0);
        for (let more = await it.next(); !more.done; more = await it.next()) yield more.value;
      }, createWriteStream(file));
      return file;
    }
  }
}

/** The original's object: only ever one of this asset's own original keys, whatever the command says. */
function sourceKeyOf(input: ConvertAssetInput): string {
  const key = input.sourceKey ?? originalKey(input.groupId, input.assetId);
  if (!isOwnOriginalKey(input.groupId, input.assetId, key)) throw new UnprocessableImageError(`the original key ${key} is not one of this asset's`);
  return key;
}

/** Every file below `dir`, as paths relative to it. */
async function filesUnder(dir: string, prefix = ''): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(path.join(dir, prefix), { withFileTypes: true })) {
    const rel = prefix ? `${prefix}/${entry.name}` : entry.name;
    if (entry.isDirectory()) out.push(...(await filesUnder(dir, rel)));
    else out.push(rel);
  }
  return out;
}

/**
 * The Deep Zoom pyramid, stored below `<conversions prefix>/deepzoom/`: the tiles first and `image.dzi` last, so
 * a reader that finds the descriptor finds every tile it names. The record points at `image.dzi`.
 */
async function makeDeepZoom(
  deps: ConvertAssetDeps,
  input: ConvertAssetInput,
  source: ImageInput,
  image: { width: number; height: number },
  dir: string,
): Promise<CompletedConversion> {
  await mkdir(dir, { recursive: true });
  await deps.images.deepZoom(source, dir, DEEPZOOM_TILE, DEEPZOOM_OVERLAP);
  const base = `${conversionsPrefix(input.groupId, input.assetId, input.checksum)}${DEEPZOOM_KEY}/`;
  const files = (await filesUnder(dir)).sort((a, b) => (a === 'image.dzi' ? 1 : b === 'image.dzi' ? -1 : a.localeCompare(b)));
  let size = 0;
  for (const rel of files) {
    const file = path.join(dir, rel);
    const bytes = (await stat(file)).size;
    size += bytes;
    const contentType = rel.endsWith('.dzi') ? 'application/xml' : 'image/jpeg';
    await deps.storage.putStream(`${base}${rel}`, createReadStream(file), { contentType, size: bytes });
  }
  return { object_key: `${base}image.dzi`, content_type: 'application/xml', width: image.width, height: image.height, size };
}

/** A result with nothing made: with `errors` the asset turns ERROR, without them it is simply done. */
export function emptyReport(input: ConvertAssetInput, errors: Record<string, string> = {}): JobOutputs {
  return {
    source_checksum: input.checksum,
    image: null,
    conversions: {},
    errors,
  };
}

export const failureReport = (input: ConvertAssetInput, key: string, message: string): JobOutputs => emptyReport(input, { [key]: message });

/**
 * Produces the group's image profile for one original and returns the report for metadata. The original is
 * read whole first, into memory when small and else into a temporary file (sharp would otherwise buffer a
 * streamed input whole in memory): libvips then reads just the header for the size check and decodes once per
 * output. Transient failures (storage, or settings where the job does not carry them) throw so the message is
 * retried; outputs are keyed by checksum, so a retry overwrites them.
 */
export async function convertAsset(
  input: ConvertAssetInput,
  deps: ConvertAssetDeps,
  progress: (done: number, total: number) => void = () => undefined,
  /** Only these keys of the profile (a re-run); undefined = all of it. */
  keys?: readonly string[],
): Promise<JobOutputs> {
  const phases: Record<string, number> = {};
  let mark = performance.now();
  const lap = (phase: string) => {
    const now = performance.now();
    phases[phase] = (phases[phase] ?? 0) + Math.round(now - mark);
    mark = now;
  };
  const dir = await mkdtemp(path.join(deps.workDir ?? tmpdir(), 'dam-conversion-'));
  try {
    // The job's own settings (only a job opened by the previous release comes without them: auth is asked, the round
    // trip hidden behind the download) and the original. Both are awaited before either failure is thrown, so
    // nothing keeps writing into `dir`.
    const [fetchedSettings, fetchedSource] = await Promise.allSettled([
      input.settings ?? deps.settings.get(input.groupId),
      (async () => fetchOriginal(await deps.storage.getStream(sourceKeyOf(input)), path.join(dir, 'original'), deps.inMemoryMaxBytes ?? IN_MEMORY_MAX_BYTES))(),
    ]);
    if (fetchedSettings.status === 'rejected') throw fetchedSettings.reason;
    if (fetchedSource.status === 'rejected') throw fetchedSource.reason;
    const settings = fetchedSettings.value as ImageSettings & { metadata?: { keep_gps?: unknown } };
    const source = fetchedSource.value;
    lap('fetch');
    const plan = planConversions(settings, keys);
    if (plan.skipped.length > 0) {
      deps.logger.debug({ asset_id: input.assetId, skipped: plan.skipped }, 'profile keys not built yet: skipped');
    }
    // Steps: the download, then making and storing each output.
    const total = 1 + 2 * plan.specs.length + (plan.deepzoom ? 1 : 0);
    let done = 1;
    progress(done, total);

    const image = await deps.images.probe(source);
    lap('probe');
    const conversions: Record<string, CompletedConversion> = {};
    const errors: Record<string, string> = { ...plan.errors };
    const outputs: Array<{ spec: ConversionSpec; expected: Size }> = [];
    for (const planned of plan.specs) {
      const spec = planned.smart ? smartImagingSpec(image) : planned;
      const expected = outputSize(image, spec);
      if (expected.width * expected.height > deps.maxOutputPixels) {
        errors[spec.key] = `output would be ${expected.width}x${expected.height}, over the limit of ${deps.maxOutputPixels} pixels`;
        continue;
      }
      outputs.push({ spec, expected });
    }
    // A re-run of some keys does not need the description again; a full run records it.
    const describe = !keys;
    // Two or more outputs share one decode at the largest size any of them uses (the hashes then read it too). One
    // output alone reads the original itself: the hashes' 100 px read of a JPEG or WebP decodes a fraction of it
    // (shrink on load); a shared decode in front of them wrote and read back a pixel file for no CPU saved (0.5-1 ms more
    // per small image, the same on large ones: docs/benchmarks.md, "conversion keeps up").
    const decodeSize = sharedDecodeSize(image, [...outputs.map((o) => o.spec), ...(describe ? [HASH_BOX] : [])]);
    const shared = outputs.length > 1 && deps.images.canDecodeOnce(image, decodeSize);
    const decoded = shared ? await deps.images.decode(source, image, decodeSize, path.join(dir, 'decoded.v')) : undefined;
    lap('decode');
    const description = describe ? await deps.describe(source, { keepGps: settings.metadata?.keep_gps === true, ...(decoded ? { decoded } : {}) }) : undefined;
    lap('describe');

    for (const { spec, expected } of outputs) {
      const { ext, contentType } = outputFormat(spec.format);
      const file = path.join(dir, `${spec.key}.${ext}`);
      const produced = decoded
        ? await deps.images.convert(decoded, boxForScaled(spec, expected), file)
        : await deps.images.convert(source, spec, file, image.pages);
      lap('convert');
      progress(++done, total);
      const objectKey = conversionKey(input.groupId, input.assetId, input.checksum, spec.key, ext);
      await deps.storage.putStream(objectKey, createReadStream(file), { contentType, size: produced.size });
      lap('store');
      progress(++done, total);
      conversions[spec.key] = {
        object_key: objectKey,
        content_type: contentType,
        width: produced.width,
        height: produced.height,
        size: produced.size,
      };
    }

    if (plan.deepzoom) {
      conversions[DEEPZOOM_KEY] = await makeDeepZoom(deps, input, source, image, path.join(dir, DEEPZOOM_KEY));
      progress(++done, total);
    }

    lap('deepzoom');
    deps.logger.debug({ asset_id: input.assetId, phases_ms: phases }, 'conversion phases');
    return {
      source_checksum: input.checksum,
      image: { width: image.width, height: image.height },
      conversions,
      errors,
      ...(description ? { metadata: { ...description } } : {}),
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
