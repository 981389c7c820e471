/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are untyped JSON */
/**
 * Video (issue 7): wall time for a `seconds`-long 1080p clip (ffmpeg lavfi sources) to reach 360p + 720p + HLS
 * through the suite (upload request to asset `OK`), against the same ffmpeg commands run directly on a local
 * file (the same argument builders the service uses), and the peak RSS of the transcode service with its ffmpeg
 * children during the run. Runs against a suite started with deploy/local/up; prints one JSON line.
 *   pnpm exec tsx bench/video.bench.ts [seconds=60]
 */
import { mkdir, mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { writeVideo } from '@dam/testing';
import { api, applySettings, login, sampleRss, servicePid, uploadFiles } from './support';
import { Ffmpeg, videoInfoFrom } from '@dam/media';
import { encodeArgs, hlsPackageArgs, type EncoderSettings } from '../services/transcode/src/domain/ffmpeg-args';
import { planTranscodes } from '../services/transcode/src/domain/transcode-plan';

const seconds = Number(process.argv[2] ?? 60);
const KEYS = ['360p-video', '720p-video', 'hls-video'];
// The service's defaults (X264_PRESET, X264_CRF, HLS_SEGMENT_SECONDS, FFMPEG_THREADS).
const ENCODER: EncoderSettings = { preset: 'veryfast', crf: 23, segmentSeconds: 4, threads: 0 };
/** Memory is sampled in both runs alike (the sampler reads /proc, which costs a little CPU). */
const SAMPLE_MS = 250;

async function viaService(jwt: string, bytes: Buffer): Promise<{ ms: number; processingMs: number; rss: { baselineMb: number; peakMb: number }; job: any }> {
  await applySettings(jwt, { conversions: { profile: { video: KEYS } }, addons: { auto: { video: [] } } });
  const memory = sampleRss(servicePid('transcode'), SAMPLE_MS);
  const started = performance.now();
  const [id] = await uploadFiles(jwt, [{ bytes, name: 'bench-1080p.mp4' }]);
  for (;;) {
    const { body } = await api(jwt, 'GET', `/api/v1/assets/${id}/data`);
    if (body.status === 'ERROR') throw new Error(`asset ERROR: ${JSON.stringify(body.errors)}`);
    if (body.status === 'OK') {
      const missing = KEYS.filter((k) => !body.conversions[k]);
      if (missing.length > 0) throw new Error(`OK without ${missing.join(', ')}`);
      break;
    }
    // Polling costs the suite CPU (gateway, metadata): not too often, the job's own times are exact anyway.
    await new Promise((r) => setTimeout(r, 250));
  }
  const ms = performance.now() - started;
  const rss = memory.stop();
  const jobs = await api(jwt, 'GET', '/api/v1/jobs?type=processing&page_size=5');
  const job = jobs.body.items.find((j: any) => j.asset_ids.includes(id));
  // From the job's creation (the original is stored) to its end: the part that compares with bare ffmpeg.
  return { ms, processingMs: Date.parse(job.updated_at) - Date.parse(job.created_at), rss, job };
}

/** The same ffmpeg work, run directly: probe, the one-pass encode, the HLS packaging. */
async function bare(file: string): Promise<{ ms: number; rss: { baselineMb: number; peakMb: number } }> {
  const ffmpeg = new Ffmpeg({ ffmpeg: process.env.FFMPEG_PATH ?? 'ffmpeg', ffprobe: process.env.FFPROBE_PATH ?? 'ffprobe' });
  const dir = await mkdtemp(path.join(tmpdir(), 'bench-video-bare-'));
  try {
    const memory = sampleRss(process.pid, SAMPLE_MS);
    const started = performance.now();
    const info = videoInfoFrom(await ffmpeg.probe(file));
    const plan = planTranscodes(KEYS, info, { watermark: false });
    const outputs = plan.encodes.map((e) => path.join(dir, `${e.id}.mp4`));
    await ffmpeg.run(encodeArgs({ source: file, encodes: plan.encodes, outputs, hasAudio: info.hasAudio, settings: ENCODER }));
    const variants = (plan.hls?.variants ?? []).map((id) => ({
      input: path.join(dir, `${id}.mp4`),
      playlist: path.join(dir, 'hls', id, 'index.m3u8'),
      segments: path.join(dir, 'hls', id, 'seg_%05d.ts'),
    }));
    for (const v of variants) await mkdir(path.dirname(v.playlist), { recursive: true });
    await ffmpeg.run(hlsPackageArgs(variants, ENCODER.segmentSeconds));
    const ms = performance.now() - started;
    const rss = memory.stop();
    if ((await readdir(path.join(dir, 'hls'))).length !== variants.length) throw new Error('bare HLS incomplete');
    return { ms, rss };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const dir = await mkdtemp(path.join(tmpdir(), 'bench-video-'));
  try {
    const file = path.join(dir, 'clip.mp4');
    await writeVideo(file, { seconds, width: 1920, height: 1080, fps: 30 });
    const bytes = await readFile(file);
    const jwt = await login();
    // Bare ffmpeg before and after the service run: this VM drifts by several per cent between minutes.
    const before = await bare(file);
    const service = await viaService(jwt, bytes);
    const after = await bare(file);
    const direct = { ms: (before.ms + after.ms) / 2, rss: { baselineMb: before.rss.baselineMb, peakMb: Math.max(before.rss.peakMb, after.rss.peakMb) } };
    console.log(
      JSON.stringify({
        bench: 'video',
        clip: { seconds, width: 1920, height: 1080, fps: 30, mib: Math.round((bytes.length / 1048576) * 10) / 10 },
        keys: KEYS,
        service_ms_from_upload: Math.round(service.ms),
        service_ms_from_stored: service.processingMs,
        bare_ffmpeg_ms: Math.round(direct.ms),
        bare_ffmpeg_runs_ms: [Math.round(before.ms), Math.round(after.ms)],
        ratio_from_upload: Math.round((service.ms / direct.ms) * 100) / 100,
        ratio_from_stored: Math.round((service.processingMs / direct.ms) * 100) / 100,
        transcode_rss_mb: service.rss,
        bare_ffmpeg_rss_mb: direct.rss,
        steps: service.job.steps.map((st: any) => ({ name: st.name, ms: Date.parse(st.finished_at) - Date.parse(st.started_at) })),
      }),
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
