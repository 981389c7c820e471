/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are untyped JSON; the assertions check them */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ffprobe, makeVideo, waitFor } from '@dam/testing';
import { watchAssetEvents } from './events';
import { CORE_SERVICES, useSuite } from './suite';

// Settings caches at their defaults: a settings change must apply to the very next upload.
const e2e = useSuite(
  { metadata: { PUBLIC_POLICY_INTERVAL_MS: '200' }, transcode: { HLS_SEGMENT_SECONDS: '2' } },
  { services: [...CORE_SERVICES, 'transcode'] },
);
let events: Awaited<ReturnType<typeof watchAssetEvents>>;
let work: string;
const auth = () => ({ authorization: `Bearer ${e2e.jwt}` });

beforeAll(async () => {
  events = await watchAssetEvents(e2e.suite.natsUrl, e2e.suite.adminSeed);
  work = await mkdtemp(path.join(tmpdir(), 'video-e2e-'));
});
e2e.beforeStop(() => events?.close());
afterAll(async () => {
  if (work) await rm(work, { recursive: true, force: true });
});

async function call(method: string, url: string, body?: unknown): Promise<{ status: number; body: any; headers: Headers }> {
  const res = await fetch(`${e2e.suite.base}${url}`, {
    method,
    headers: { ...auth(), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const bytes = Buffer.from(await res.arrayBuffer());
  const json = res.headers.get('content-type')?.includes('application/json');
  return { status: res.status, body: json ? JSON.parse(bytes.toString('utf8')) : bytes, headers: res.headers };
}

const data = (id: string) => call('GET', `/api/v1/assets/${id}/data`);
const settled = (id: string) =>
  waitFor(async () => ((await data(id)).body.status !== 'NOT_READY' ? (await data(id)).body : undefined), {
    timeoutMs: 120_000,
    intervalMs: 250,
    description: `${id} processed`,
  });
const jobDone = (jobId: number) =>
  waitFor(
    async () => {
      const job = (await call('GET', `/api/v1/jobs/${jobId}`)).body;
      return job.status === 'COMPLETED' || job.status === 'ERROR' ? job : undefined;
    },
    { timeoutMs: 120_000, intervalMs: 250, description: `job ${jobId}` },
  );

describe('a video through the public addresses', () => {
  let id: string;

  it('uploads a clip; the profile is transcoded as a four-step job and the asset turns OK with its video metadata', async () => {
    const patched = await call('PATCH', '/api/v1/settings', {
      conversions: { profile: { video: ['360p-video', '1080p-video', 'hls-video', 'clip_preview'] } },
      addons: { auto: { video: ['storyboard'] } },
    });
    expect(patched.status).toBe(200);

    const form = new FormData();
    form.append('file', new Blob([await makeVideo({ seconds: 5, width: 640, height: 360 })]), 'clip.mp4');
    const res = await fetch(`${e2e.suite.upload}/api/v1/assets/new/content/original/upload`, { method: 'POST', headers: auth(), body: form });
    expect(res.status).toBe(200);
    const file = ((await res.json()) as { files: Array<{ id: string; status: string; metadata: Record<string, unknown> }> }).files[0];
    expect(file?.status).toBe('NOT_READY');
    // CONTRACT §14: the upload result already carries the video's metadata.
    expect(file?.metadata).toMatchObject({ width: 640, height: 360, video_codec: 'h264', audio_codec: 'aac', frame_rate: 25, duration: expect.any(Number) });
    id = file?.id ?? '';

    const asset = await settled(id);
    expect(asset.status).toBe('OK');
    expect(asset.content_type).toBe('video/mp4');
    expect(asset.metadata).toMatchObject({ width: 640, height: 360, video_codec: 'h264', audio_codec: 'aac', frame_rate: 25 });
    expect(asset.metadata.duration).toBeCloseTo(5, 0);
    expect(asset.metadata.bitrate).toBeGreaterThan(0);
    expect(Object.keys(asset.conversions).sort()).toEqual(['360p-video', 'clip_preview', 'hls-video', 'storyboard']);
    expect(asset.conversions['360p-video']).toMatchObject({ width: 640, height: 360 });

    const jobs = (await call('GET', '/api/v1/jobs?type=processing&page_size=100')).body;
    const job = jobs.items.find((j: any) => j.asset_ids.includes(id));
    expect(job).toMatchObject({ status: 'COMPLETED', progress: 100, skipped: { '1080p-video': expect.stringContaining('upscale') } });
    expect(job.steps.map((s: any) => [s.name, s.status])).toEqual([
      ['preprocess', 'COMPLETED'],
      ['transcodes', 'COMPLETED'],
      ['addons', 'COMPLETED'],
      ['postprocess', 'COMPLETED'],
    ]);
    for (const s of job.steps) expect(Date.parse(s.finished_at)).toBeGreaterThanOrEqual(Date.parse(s.started_at));

    await waitFor(() => events.seen.some((e) => e.type === 'file-processed' && e.asset_id === id && e.status === 'OK') || undefined, { timeoutMs: 10_000 });
  });

  it('serves the renditions, the HLS playlists and segments, and the storyboard', async () => {
    const mp4 = await call('GET', `/api/v1/assets/${id}/content/360p-video/download`);
    expect(mp4.status).toBe(200);
    expect(mp4.headers.get('content-type')).toBe('video/mp4');
    await writeFile(path.join(work, '360p.mp4'), mp4.body);
    expect((await ffprobe(path.join(work, '360p.mp4'))).streams.map((s) => s.codec_name).sort()).toEqual(['aac', 'h264']);

    const master = await call('GET', `/api/v1/assets/${id}/content/hls-video/master.m3u8`);
    expect(master.status).toBe(200);
    expect(master.headers.get('content-type')).toBe('application/vnd.apple.mpegurl');
    expect(master.body.toString()).toContain('360p/index.m3u8');
    const variant = await call('GET', `/api/v1/assets/${id}/content/hls-video/360p/index.m3u8`);
    const segment = /^seg_\d+\.ts$/m.exec(variant.body.toString())?.[0];
    const ts = await call('GET', `/api/v1/assets/${id}/content/hls-video/360p/${segment}`);
    expect(ts.status).toBe(200);
    expect(ts.headers.get('content-type')).toBe('video/mp2t');
    expect(ts.body[0]).toBe(0x47); // MPEG-TS sync byte

    expect((await call('GET', `/api/v1/assets/${id}/conversions/hls-video`)).status).toBe(400);
    const vtt = await call('GET', `/api/v1/assets/${id}/content/storyboard/storyboard.vtt`);
    expect(vtt.status).toBe(200);
    expect(vtt.body.toString()).toMatch(/^WEBVTT\n\n00:00:00\.000 --> 00:00:01\.000\nsprite\.jpg#xywh=0,0,160,90/);
    const sprite = await call('GET', `/api/v1/assets/${id}/conversions/storyboard`);
    expect(sprite.status).toBe(200);
    expect(sprite.headers.get('content-type')).toBe('image/jpeg');
  });

  it('makes HLS public as a whole: the master, its variant playlists and segments read anonymously', async () => {
    const res = await call('POST', `/api/v1/assets/${id}/content/set_public_access`, { keys: ['hls-video'] });
    expect(res.status).toBe(200);
    const master = (await data(id)).body.urls.public['hls-video'] as string;
    expect(master).toMatch(/\/hls-video\/master\.m3u8$/);
    const folder = master.slice(0, master.lastIndexOf('/') + 1);
    // The bucket policy follows within PUBLIC_POLICY_INTERVAL_MS.
    await waitFor(async () => (await fetch(master)).status === 200 || undefined, { timeoutMs: 10_000, intervalMs: 200, description: 'public master' });
    const variant = await fetch(`${folder}360p/index.m3u8`);
    expect(variant.status).toBe(200);
    const segment = /^seg_\d+\.ts$/m.exec(await variant.text())?.[0];
    expect((await fetch(`${folder}360p/${segment}`)).status).toBe(200);
    // Nothing beside it: the original stays private.
    const original = `${folder.replace(/conversions\/.*$/, '')}originals/`;
    expect((await fetch(`${original}1/${id}`)).status).toBe(403);
  });

  it('process: video keys run as a transcode job; image keys are refused for a video', async () => {
    expect((await call('POST', `/api/v1/assets/${id}/process`, { keys: ['thumb'] })).status).toBe(400);
    const accepted = await call('POST', `/api/v1/assets/${id}/process`, { keys: ['480p-video', '360p-video'] });
    expect(accepted.status).toBe(202);
    expect(accepted.body).toMatchObject({ status: 'QUEUED' });
    const job = await jobDone(accepted.body.job_id);
    expect(job).toMatchObject({ status: 'COMPLETED', skipped: { '480p-video': expect.stringContaining('upscale') } });
    expect(job.steps.map((s: any) => s.name)).toEqual(['preprocess', 'transcodes', 'addons', 'postprocess']);
  });

  it('a file that only looks like a video ends ERROR with the reason', async () => {
    const form = new FormData();
    // An MP4 header and nothing playable after it: sniffed as video/mp4, refused by ffprobe.
    form.append('file', new Blob([Buffer.concat([Buffer.from('\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom'), Buffer.alloc(8192, 1)])]), 'broken.mp4');
    const res = await fetch(`${e2e.suite.upload}/api/v1/assets/new/content/original/upload`, { method: 'POST', headers: auth(), body: form });
    const broken = ((await res.json()) as { files: Array<{ id: string; content_type?: string }> }).files[0];
    const asset = await settled(broken?.id ?? '');
    expect(asset.status).toBe('ERROR');
    expect(asset.errors?.original).toMatch(/not a readable video/);
  });
});
