import {
  ffprobe,
  makeVideo,
  scaled,
  startJobHarness,
  startServiceProcess,
  startSettingsStub,
  waitFor,
  type JobHarness,
  type ServiceProcess,
} from '@dam/testing';
import { createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';

jest.setTimeout(scaled(240_000));

// The 360p rendition is made in the first pass; the preview and the storyboard come after it.
const SETTINGS = { conversions: { profile: { video: ['360p-video', 'clip_preview'] } }, addons: { auto: { video: ['storyboard'] } } };

const logLine = (msg: string, assetId: string): RegExp => new RegExp(`^(?=.*"msg":"${msg}")(?=.*"asset_id":"${assetId}")`);

describe('transcode crash mid-job', () => {
  let h: JobHarness;
  let auth: Awaited<ReturnType<typeof startSettingsStub>>;
  const services: ServiceProcess[] = [];

  beforeAll(async () => {
    h = await startJobHarness('transcode');
    auth = await startSettingsStub(h.identities, () => ({ status: 200, body: SETTINGS }), ['transcode']);
  });

  afterAll(async () => {
    await Promise.all(services.map((s) => s.stop()));
    await auth?.close();
    await h?.close();
  });

  it('a worker SIGKILLed after its first output: the next one keeps that output, makes the rest, reports once', async () => {
    const seconds = 20;
    const checksum = await h.putOriginal('g1', 'long', await makeVideo({ seconds, width: 640, height: 360 }));
    // A short ack wait brings the killed process's message back soon; scaled, so that the survivor's own work (kept
    // alive every second) is not taken for a dead worker's on a slower machine.
    const env = h.env({ AUTH_URL: auth.url, SETTINGS_MAX_AGE_MS: '0', ACK_WAIT_MS: String(scaled(2000)), FFMPEG_THREADS: '1' });
    const first = await startServiceProcess('transcode', env);
    services.push(first);
    const jobId = await h.publishJob('g1', 'long', { checksum, contentType: 'video/mp4' });

    // Killed once the 360p rendition is stored and marked, while the preview or storyboard is being made.
    const marker = `conversions/g1/long/${checksum}/_transcode/360p-video.json`;
    await waitFor(async () => ((await h.storage.stat(marker)) ? true : undefined), { timeoutMs: 120_000, intervalMs: 50, description: '360p marker' });
    first.kill('SIGKILL');
    await expect(first.exited).resolves.toMatchObject({ signal: 'SIGKILL' });
    expect(h.jobReports.some((r) => r.job_id === jobId && (r.state === 'COMPLETED' || r.state === 'FAILED'))).toBe(false);

    const second = await startServiceProcess('transcode', env);
    services.push(second);
    const report = await h.reportFor('long', 120_000);
    expect(report.errors).toEqual({});
    expect(Object.keys(report.conversions).sort()).toEqual(['360p-video', 'clip_preview', 'storyboard']);
    await second.waitForLog(logLine('output already made by this job: kept', 'long'), 10_000);
    expect(second.logs().some((l) => /"key":"360p-video"/.test(l) && /already made/.test(l))).toBe(true);

    // Every listed output exists and decodes.
    const dir = await mkdtemp(path.join(tmpdir(), 'transcode-crash-'));
    try {
      const file = path.join(dir, '360p.mp4');
      await pipeline(await h.storage.getStream(report.conversions['360p-video']?.object_key ?? ''), createWriteStream(file));
      const probed = await ffprobe(file);
      expect(probed.streams.find((s) => s.codec_type === 'video')).toMatchObject({ width: 640, height: 360 });
      expect(Number(probed.format.duration)).toBeCloseTo(seconds, 0);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    const finals = h.jobReports.filter((r) => r.job_id === jobId && r.state === 'COMPLETED');
    expect(finals).toHaveLength(1);
  });
});
