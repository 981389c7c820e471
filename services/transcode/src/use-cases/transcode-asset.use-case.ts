import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { z } from 'zod';
import { completedConversionSchema, type CompletedConversion, type JobOutputs, type JobSettings } from '@dam/events';
import type { GroupSettingsClient } from '@dam/internal-api';
import type { TranscodeStep } from '@dam/jobs';
import type { Logger } from '@dam/logging';
import { conversionKey, conversionsPrefix, isOwnOriginalKey, originalKey, type Storage } from '@dam/storage';
import { clipPreviewArgs, encodeArgs, hlsPackageArgs, spriteArgs, storyboardFramesArgs, type EncoderSettings } from '../domain/ffmpeg-args';
import { avcCodecString, bandwidthOf, masterPlaylist, MASTER_PLAYLIST, playlistSegments, VARIANT_PLAYLIST, type HlsVariant } from '../domain/hls';
import { gridFor, SPRITE_FILE, storyboardVtt, VTT_FILE } from '../domain/storyboard';
import { CLIP_PREVIEW_KEY, HLS_KEY, planTranscodes, STORYBOARD_KEY, type Encode, type TranscodePlan } from '../domain/transcode-plan';
import { NoVideoStreamError, UnprocessableVideoError, videoInfoFrom, videoMetadata, type Ffmpeg, type VideoInfo } from '@dam/media';

export interface TranscodeInput {
  jobId: number;
  groupId: string;
  assetId: string;
  checksum: string;
  sourceKey?: string;
  /** Only these keys (a `process` request); absent: the group's video profile and automatic video addons. */
  keys?: readonly string[];
  /** The group's settings as the job was opened with them; absent (a job of the previous release): read from auth. */
  settings?: JobSettings;
}

/** The group's watermark image (an asset of the group), or undefined when it is gone. */
export type WatermarkSource = (groupId: string, assetId: string) => Promise<{ object_key: string } | undefined>;

export interface TranscodeDeps {
  storage: Storage;
  ffmpeg: Ffmpeg;
  /** The group's settings, for a job that does not carry them (opened by the previous release). */
  settings: GroupSettingsClient;
  watermarkSource: WatermarkSource;
  logger: Logger;
  encoder: EncoderSettings;
  clipSeconds: number;
  workDir?: string;
}

export interface TranscodeProgress {
  step(name: TranscodeStep): void;
  /** Overall progress 0..1. */
  progress(fraction: number): void;
}

/** Where each step's progress lies on the job's 0-100 scale. */
const SPAN: Record<TranscodeStep, [number, number]> = { preprocess: [0, 0.05], transcodes: [0.05, 0.85], addons: [0.85, 0.97], postprocess: [0.97, 0.99] };

/** The report of a file with sound and no picture: its metadata, every key skipped with the reason. */
function audioOnlyReport(input: TranscodeInput, keys: readonly string[], audio: NonNullable<NoVideoStreamError['audio']>): JobOutputs {
  return {
    ...reportOf(input),
    conversions: {},
    errors: {},
    ...(keys.length > 0 ? { skipped: Object.fromEntries(keys.map((k) => [k, 'the file has no video stream'])) } : {}),
    metadata: { duration: audio.duration, video_codec: null, audio_codec: audio.audio_codec, bitrate: audio.bitrate },
  };
}

/** Whether a plan makes anything (else the job only describes the video). */
const hasWork = (plan: TranscodePlan): boolean =>
  plan.files.length > 0 || plan.hls !== undefined || plan.clipPreview !== undefined || plan.storyboard !== undefined;

/** What every transcode result starts with: which original it is about. */
const reportOf = (input: TranscodeInput) => ({
  source_checksum: input.checksum,
  image: null,
});

interface Settings {
  conversions?: { profile?: { video?: unknown }; watermark_asset_id?: unknown };
  addons?: { auto?: { video?: unknown } };
}

const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((k): k is string => typeof k === 'string') : []);

/** The keys a job makes: the request's, or the profile's video keys and the automatic video addons. */
export function keysOf(settings: Settings, requested?: readonly string[]): string[] {
  if (requested) return [...new Set(requested)];
  return [...new Set([...strings(settings.conversions?.profile?.video), ...strings(settings.addons?.auto?.video)])];
}

/** The original's object: only ever one of this asset's own original keys, whatever the command says. */
function sourceKeyOf(input: TranscodeInput): string {
  const key = input.sourceKey ?? originalKey(input.groupId, input.assetId);
  if (!isOwnOriginalKey(input.groupId, input.assetId, key)) throw new UnprocessableVideoError(`the original key ${key} is not one of this asset's`);
  return key;
}

/**
 * Makes one video's transcodes. Every output is stored as soon as it is made, and then a marker naming the job
 * (`<prefix>_transcode/<key>.json`) is written: a worker that picks the same job up after a crash makes only
 * what has no marker, and an output is never listed before all its files are stored (multi-file outputs store
 * their descriptor last). Transient failures (storage, or settings where the job does not carry them) throw so the
 * job is retried.
 */
export async function transcodeAsset(input: TranscodeInput, deps: TranscodeDeps, report: TranscodeProgress): Promise<JobOutputs> {
  const at = (step: TranscodeStep, fraction: number) => {
    const [from, to] = SPAN[step];
    report.progress(from + (to - from) * Math.min(1, Math.max(0, fraction)));
  };
  report.step('preprocess');
  // The job's own settings; only a job opened by the previous release comes without them and has auth asked.
  const settings = (input.settings ?? (await deps.settings.get(input.groupId))) as Settings;
  const keys = keysOf(settings, input.keys);
  const prefix = conversionsPrefix(input.groupId, input.assetId, input.checksum);
  const dir = await mkdtemp(path.join(deps.workDir ?? tmpdir(), 'dam-transcode-'));
  try {
    const source = path.join(dir, 'original');
    const sourceKey = sourceKeyOf(input);
    const clock = phaseClock();
    const { timed } = clock;
    // ffprobe reads only the ranges it needs over a presigned URL: a video with nothing to make (an empty
    // profile) is described without downloading it. Whatever goes wrong there, the local file decides.
    let noPicture: NoVideoStreamError | undefined;
    const described = (error: unknown): undefined => {
      if (error instanceof NoVideoStreamError && error.audio) noPicture = error;
      return undefined;
    };
    let info = await timed('probe_remote', async () => videoInfoFrom(await deps.ffmpeg.probe(await deps.storage.presignGet(sourceKey, 3600)))).catch(described);
    // Sound without picture (audio in a video container): described, nothing to make, not an error.
    if (noPicture?.audio) return audioOnlyReport(input, keys, noPicture.audio);
    const watermarkId = typeof settings.conversions?.watermark_asset_id === 'string' ? settings.conversions.watermark_asset_id : undefined;
    const planFor = (i: VideoInfo) => planTranscodes(keys, i, { watermark: watermarkId !== undefined, clipSeconds: deps.clipSeconds });
    if (!info || hasWork(planFor(info))) {
      await timed('download', async () => pipeline(await deps.storage.getStream(sourceKey), createWriteStream(source)));
      try {
        info ??= await timed('probe', async () => videoInfoFrom(await deps.ffmpeg.probe(source)));
      } catch (error) {
        if (error instanceof NoVideoStreamError && error.audio) return audioOnlyReport(input, keys, error.audio);
        throw error;
      }
    }
    const plan = planFor(info);
    const work = new Work(input, deps, prefix, dir, info, plan, clock);
    await work.loadDone();
    at('preprocess', 1);

    report.step('transcodes');
    await work.transcodes(watermarkId, (f) => at('transcodes', f));
    report.step('addons');
    await work.addons((f) => at('addons', f));
    report.step('postprocess');
    at('postprocess', 0);
    deps.logger.info({ asset_id: input.assetId, job_id: input.jobId, phases_ms: clock.phases }, 'transcode phases');
    return {
      ...reportOf(input),
      conversions: work.done,
      errors: work.errors,
      ...(Object.keys(plan.skipped).length > 0 ? { skipped: plan.skipped } : {}),
      metadata: videoMetadata(info),
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Objects stored at once when an output has many files (HLS segments). */
const UPLOAD_CONCURRENCY = 6;

/** Runs tasks, at most `limit` at a time; results in task order; the first failure rejects after all settled. */
async function runLimited<T>(tasks: ReadonlyArray<() => Promise<T>>, limit: number): Promise<T[]> {
  const results: T[] = new Array<T>(tasks.length);
  let next = 0;
  const lane = async () => {
    while (next < tasks.length) {
      const i = next++;
      results[i] = await (tasks[i] as () => Promise<T>)();
    }
  };
  await settleAll(Array.from({ length: Math.min(limit, tasks.length) }, lane));
  return results;
}

/** Waits for every promise, then rethrows the first failure: nothing is left running when the work dir goes. */
async function settleAll(promises: ReadonlyArray<Promise<unknown>>): Promise<void> {
  const outcomes = await Promise.allSettled(promises);
  const failed = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected');
  if (failed) throw failed.reason;
}

/** What `<prefix>_transcode/<key>.json` holds: the output as reported, and the job that made it. */
const markerSchema = completedConversionSchema.extend({ job_id: z.number().int() });

/** Wall time of each phase of a job (ms), for the `transcode phases` log: where a slow job spent its time. */
function phaseClock() {
  const phases: Record<string, number> = {};
  const timed = async <T>(phase: string, run: () => Promise<T>): Promise<T> => {
    const started = performance.now();
    try {
      return await run();
    } finally {
      phases[phase] = Math.round(performance.now() - started);
    }
  };
  return { phases, timed };
}
type PhaseClock = ReturnType<typeof phaseClock>;

/** One job's outputs: what is done (markers of this job whose object exists), what is left, and the making. */
class Work {
  readonly done: Record<string, CompletedConversion> = {};
  readonly errors: Record<string, string>;
  private readonly timed: PhaseClock['timed'];

  constructor(
    private readonly input: TranscodeInput,
    private readonly deps: TranscodeDeps,
    private readonly prefix: string,
    private readonly dir: string,
    private readonly info: VideoInfo,
    private readonly plan: TranscodePlan,
    clock: PhaseClock,
  ) {
    this.errors = { ...plan.errors };
    this.timed = clock.timed;
  }

  private markerKey = (key: string) => `${this.prefix}_transcode/${key}.json`;

  private plannedKeys(): string[] {
    const p = this.plan;
    return [...p.files.map((f) => f.key), ...(p.hls ? [HLS_KEY] : []), ...(p.clipPreview ? [CLIP_PREVIEW_KEY] : []), ...(p.storyboard ? [STORYBOARD_KEY] : [])];
  }

  /** Outputs this job already stored before a crash: its own markers, with the output still in place. */
  async loadDone(): Promise<void> {
    for (const key of this.plannedKeys()) {
      const marker = await this.readMarker(key);
      if (marker && marker.job_id === this.input.jobId && (await this.deps.storage.stat(marker.object_key))) {
        const { job_id: _job, ...conversion } = marker;
        this.done[key] = conversion;
        this.deps.logger.info({ asset_id: this.input.assetId, key }, 'output already made by this job: kept');
      }
    }
  }

  private async readMarker(key: string) {
    try {
      const stream = await this.deps.storage.getStream(this.markerKey(key));
      const chunks: Buffer[] = [];
      for await (const chunk of stream) chunks.push(chunk as Buffer);
      const parsed = markerSchema.safeParse(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      return parsed.success ? parsed.data : undefined;
    } catch {
      return undefined;
    }
  }

  /** Records an output as made: after every one of its files is stored. */
  private async finish(key: string, conversion: CompletedConversion): Promise<void> {
    const body = Buffer.from(JSON.stringify({ ...conversion, job_id: this.input.jobId }));
    await this.deps.storage.putBuffer(this.markerKey(key), body, { contentType: 'application/json', size: body.length });
    this.done[key] = conversion;
  }

  private async upload(file: string, objectKey: string, contentType: string): Promise<number> {
    const size = (await stat(file)).size;
    await this.deps.storage.putStream(objectKey, createReadStream(file), { contentType, size });
    return size;
  }

  private encodeFile = (e: Encode) => path.join(this.dir, `encode-${e.id}.mp4`);

  /** The MP4 renditions and HLS in one decode of the source, then the muted preview. */
  async transcodes(watermarkId: string | undefined, progress: (fraction: number) => void): Promise<void> {
    const files = this.plan.files.filter((f) => !this.done[f.key]);
    const hls = this.plan.hls && !this.done[HLS_KEY] ? this.plan.hls : undefined;
    const needed = new Set([...files.map((f) => f.encode), ...(hls?.variants ?? [])]);
    let encodes = this.plan.encodes.filter((e) => needed.has(e.id));
    const clip = this.plan.clipPreview && !this.done[CLIP_PREVIEW_KEY] ? this.plan.clipPreview : undefined;
    // Progress: the shared encode is most of the work; packaging and the preview share the rest.
    const encodeShare = clip ? 0.85 : 0.95;

    let watermark: string | undefined;
    if (encodes.some((e) => e.watermark)) {
      watermark = await this.watermarkFile(watermarkId);
      if (!watermark) {
        for (const f of files) if (encodes.find((e) => e.id === f.encode)?.watermark) this.errors[f.key] = 'the watermark asset does not exist any more';
        encodes = encodes.filter((e) => !e.watermark);
      }
    }
    if (encodes.length > 0) {
      await this.timed('encode', () =>
        this.deps.ffmpeg.run(
          encodeArgs({
            source: path.join(this.dir, 'original'),
            ...(watermark ? { watermark } : {}),
            encodes,
            outputs: encodes.map(this.encodeFile),
            hasAudio: this.info.hasAudio,
            settings: this.deps.encoder,
          }),
          { onProgress: (seconds) => progress((encodeShare * seconds) / this.info.duration) },
        ),
      );
    }
    progress(encodeShare);
    // What follows the encode overlaps: storing the renditions, packaging and storing HLS (I/O), the preview (CPU).
    await this.timed('store', () =>
      settleAll([
        ...files.map(async (f) => {
          const e = encodes.find((x) => x.id === f.encode);
          if (!e) return;
          const objectKey = conversionKey(this.input.groupId, this.input.assetId, this.input.checksum, f.key, 'mp4');
          const size = await this.upload(this.encodeFile(e), objectKey, 'video/mp4');
          await this.finish(f.key, { object_key: objectKey, content_type: 'video/mp4', width: e.width, height: e.height, size });
        }),
        ...(hls ? [this.packageHls(hls.variants.map((id) => encodes.find((e) => e.id === id) as Encode))] : []),
        ...(clip
          ? [
              (async () => {
                const file = path.join(this.dir, 'clip_preview.mp4');
                await this.deps.ffmpeg.run(clipPreviewArgs(path.join(this.dir, 'original'), clip, this.deps.encoder, file));
                const objectKey = conversionKey(this.input.groupId, this.input.assetId, this.input.checksum, CLIP_PREVIEW_KEY, 'mp4');
                const size = await this.upload(file, objectKey, 'video/mp4');
                await this.finish(CLIP_PREVIEW_KEY, { object_key: objectKey, content_type: 'video/mp4', width: clip.width, height: clip.height, size });
              })(),
            ]
          : []),
      ]),
    );
    progress(1);
  }

  /** The watermark image from the group's watermark asset, or undefined when that asset is gone. */
  private async watermarkFile(watermarkId: string | undefined): Promise<string | undefined> {
    if (!watermarkId) return undefined;
    const found = await this.deps.watermarkSource(this.input.groupId, watermarkId);
    if (!found) return undefined;
    const file = path.join(this.dir, 'watermark');
    await pipeline(await this.deps.storage.getStream(found.object_key), createWriteStream(file));
    return file;
  }

  /** Variant playlists and segments by copying the encoded streams (no second encode), the master last. */
  private async packageHls(encodes: Encode[]): Promise<void> {
    const root = path.join(this.dir, HLS_KEY);
    const variants = encodes.map((e) => ({ e, folder: path.join(root, e.id) }));
    for (const v of variants) await mkdir(v.folder, { recursive: true });
    await this.timed('hls_package', () =>
      this.deps.ffmpeg.run(
        hlsPackageArgs(
          variants.map((v) => ({ input: this.encodeFile(v.e), playlist: path.join(v.folder, VARIANT_PLAYLIST), segments: path.join(v.folder, 'seg_%05d.ts') })),
          this.deps.encoder.segmentSeconds,
        ),
      ),
    );
    const base = `${this.prefix}${HLS_KEY}/`;
    const described: HlsVariant[] = [];
    // Segments and variant playlists stored several at a time; the master, which names them, after all of them.
    const uploads = [];
    for (const v of variants) {
      const playlist = await readFile(path.join(v.folder, VARIANT_PLAYLIST), 'utf8');
      const segments = playlistSegments(playlist);
      for (const name of [...segments.map((s) => s.uri), VARIANT_PLAYLIST]) {
        const type = name === VARIANT_PLAYLIST ? 'application/vnd.apple.mpegurl' : 'video/mp2t';
        uploads.push(async () => this.upload(path.join(v.folder, name), `${base}${v.e.id}/${name}`, type));
      }
      const sizes = await Promise.all(segments.map(async (s) => (await stat(path.join(v.folder, s.uri))).size));
      const probe = (await this.deps.ffmpeg.probe(this.encodeFile(v.e))) as { streams?: Array<{ codec_type?: string; profile?: string; level?: number }> };
      const video = probe.streams?.find((s) => s.codec_type === 'video');
      const codecs = [avcCodecString(video?.profile, video?.level), ...(this.info.hasAudio ? ['mp4a.40.2'] : [])].join(',');
      described.push({
        name: v.e.id,
        width: v.e.width,
        height: v.e.height,
        codecs,
        ...bandwidthOf(segments.map((s, i) => ({ duration: s.duration, bytes: sizes[i] ?? 0 }))),
      });
    }
    const stored = await runLimited(uploads, UPLOAD_CONCURRENCY);
    let total = stored.reduce((a, b) => a + b, 0);
    const master = path.join(root, MASTER_PLAYLIST);
    await writeFile(master, masterPlaylist(described));
    total += await this.upload(master, `${base}${MASTER_PLAYLIST}`, 'application/vnd.apple.mpegurl');
    const largest = encodes[encodes.length - 1] as Encode;
    await this.finish(HLS_KEY, {
      object_key: `${base}${MASTER_PLAYLIST}`,
      content_type: 'application/vnd.apple.mpegurl',
      width: largest.width,
      height: largest.height,
      size: total,
    });
  }

  /** The storyboard: thumbnails every interval, tiled into one sprite, and the WebVTT file mapping times to them. */
  async addons(progress: (fraction: number) => void): Promise<void> {
    const plan = this.plan.storyboard;
    if (!plan || this.done[STORYBOARD_KEY]) return;
    const frames = path.join(this.dir, 'frames');
    await mkdir(frames, { recursive: true });
    const pattern = path.join(frames, '%05d.jpg');
    await this.deps.ffmpeg.run(storyboardFramesArgs(path.join(this.dir, 'original'), plan, this.deps.encoder, pattern), {
      onProgress: (seconds) => progress((0.9 * seconds) / this.info.duration),
    });
    const count = (await readdir(frames)).filter((f) => f.endsWith('.jpg')).length;
    if (count === 0) {
      this.errors[STORYBOARD_KEY] = 'no frame could be read for the storyboard';
      return;
    }
    const grid = gridFor(count);
    const sprite = path.join(this.dir, SPRITE_FILE);
    await this.deps.ffmpeg.run(spriteArgs(pattern, grid, sprite));
    const base = `${this.prefix}${STORYBOARD_KEY}/`;
    const vtt = Buffer.from(storyboardVtt(plan, count, this.info.duration));
    // The cue file first, the sprite (what the record points at) last.
    await this.deps.storage.putBuffer(`${base}${VTT_FILE}`, vtt, { contentType: 'text/vtt', size: vtt.length });
    const size = await this.upload(sprite, `${base}${SPRITE_FILE}`, 'image/jpeg');
    await this.finish(STORYBOARD_KEY, {
      object_key: `${base}${SPRITE_FILE}`,
      content_type: 'image/jpeg',
      width: grid.columns * plan.thumbWidth,
      height: grid.rows * plan.thumbHeight,
      size: size + vtt.length,
    });
    progress(1);
  }
}
