import { execFile } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { promisify } from 'node:util';
import type { Storage } from '@dam/storage';
import {
  ffprobe,
  makeVideo,
  scaled,
  startInternalStub,
  startJobHarness,
  startServiceProcess,
  startSettingsStub,
  type InternalStub,
  type JobHarness,
  type ServiceProcess,
} from '@dam/testing';

jest.setTimeout(scaled(180_000));

const exec = promisify(execFile);

const SETTINGS = {
  conversions: {
    profile: { video: ['360p-video', '480p-video', '720p-video', '1080p-video', 'hls-video', '360p-wm-video', 'clip_preview'] },
    watermark_asset_id: 'wmasset',
  },
  addons: { auto: { video: ['storyboard'] } },
};

async function download(storage: Storage, key: string, file: string): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  await pipeline(await storage.getStream(key), createWriteStream(file));
}

/** One frame at `seconds` as raw RGB. */
async function frameAt(file: string, seconds: number): Promise<Buffer> {
  const { stdout } = await exec(
    'ffmpeg',
    ['-v', 'error', '-ss', String(seconds), '-i', file, '-frames:v', '1', '-f', 'rawvideo', '-pix_fmt', 'rgb24', 'pipe:1'],
    {
      encoding: 'buffer',
      maxBuffer: 64 * 1024 * 1024,
    },
  );
  return stdout;
}

/** Mean absolute difference of two RGB frames inside a rectangle. */
function regionDiff(a: Buffer, b: Buffer, width: number, box: { x: number; y: number; w: number; h: number }): number {
  let sum = 0;
  for (let y = box.y; y < box.y + box.h; y++) {
    for (let x = box.x; x < box.x + box.w; x++) {
      for (let c = 0; c < 3; c++) {
        const i = (y * width + x) * 3 + c;
        sum += Math.abs((a[i] ?? 0) - (b[i] ?? 0));
      }
    }
  }
  return sum / (box.w * box.h * 3);
}

/** Top-level MP4 boxes in file order (`+faststart` puts `moov` before `mdat`). */
function topLevelBoxes(bytes: Buffer): string[] {
  const boxes: string[] = [];
  for (let at = 0; at + 8 <= bytes.length && boxes.length < 20;) {
    const size = bytes.readUInt32BE(at);
    boxes.push(bytes.toString('latin1', at + 4, at + 8));
    if (size < 8) break;
    at += size;
  }
  return boxes;
}

describe('transcode service (real ffmpeg, NATS, S3)', () => {
  let h: JobHarness;
  let auth: Awaited<ReturnType<typeof startSettingsStub>>;
  let metadata: InternalStub;
  let service: ServiceProcess;
  let work: string;

  beforeAll(async () => {
    h = await startJobHarness('transcode');
    auth = await startSettingsStub(h.identities, () => ({ status: 200, body: SETTINGS }), ['transcode']);
    metadata = await startInternalStub({
      identities: h.identities,
      service: 'metadata',
      callers: ['transcode'],
      answer: (method, url) =>
        method === 'GET' && url === '/internal/v1/groups/g1/assets/wmasset/source'
          ? { status: 200, body: { object_key: 'originals/g1/wmasset', content_type: 'image/png', checksum: 'x' } }
          : undefined,
    });
    work = await mkdtemp(path.join(tmpdir(), 'transcode-test-'));
    // The watermark: a white box with a black border, so it shows on any part of the pattern.
    const wm = path.join(work, 'wm.png');
    await exec('ffmpeg', ['-v', 'error', '-f', 'lavfi', '-i', 'color=white:s=200x100,drawbox=x=0:y=0:w=200:h=100:color=black:t=10', '-frames:v', '1', wm]);
    await h.storage.putBuffer('originals/g1/wmasset', await readFile(wm), { contentType: 'image/png' });
    // JOB_START_REPORT_DELAY_MS 0: the first step is reported too, however soon the next begins.
    service = await startServiceProcess(
      'transcode',
      h.env({ AUTH_URL: auth.url, SETTINGS_MAX_AGE_MS: '0', METADATA_URL: metadata.url, HLS_SEGMENT_SECONDS: '2', JOB_START_REPORT_DELAY_MS: '0' }),
    );
  });

  afterAll(async () => {
    await service?.stop();
    await metadata?.close();
    await auth?.close();
    await h?.close();
    if (work) await rm(work, { recursive: true, force: true });
  });

  it('makes every video key of the profile from a 720p clip, skips 1080p, and reports progress step by step', async () => {
    const seconds = 8;
    const checksum = await h.putOriginal('g1', 'clip', await makeVideo({ seconds, width: 1280, height: 720 }));
    const jobId = await h.publishJob('g1', 'clip', { checksum, contentType: 'video/mp4' });
    const report = await h.reportFor('clip', 150_000);

    expect(report.errors).toEqual({});
    expect(report.skipped).toEqual({ '1080p-video': expect.stringContaining('upscale') });
    expect(report.metadata).toMatchObject({ width: 1280, height: 720, video_codec: 'h264', audio_codec: 'aac', frame_rate: 25 });
    expect(report.metadata?.duration).toBeCloseTo(seconds, 0);
    expect(Object.keys(report.conversions).sort()).toEqual([
      '360p-video',
      '360p-wm-video',
      '480p-video',
      '720p-video',
      'clip_preview',
      'hls-video',
      'storyboard',
    ]);

    // Renditions: H.264/AAC MP4 at the ladder height, faststart, as long as the source.
    for (const [key, width, height] of [
      ['360p-video', 640, 360],
      ['480p-video', 854, 480],
      ['720p-video', 1280, 720],
    ] as const) {
      const c = report.conversions[key];
      expect(c).toMatchObject({ content_type: 'video/mp4', width, height });
      const file = path.join(work, `${key}.mp4`);
      await download(h.storage, c?.object_key ?? '', file);
      const probed = await ffprobe(file);
      expect(probed.streams.find((s) => s.codec_type === 'video')).toMatchObject({ codec_name: 'h264', width, height });
      expect(probed.streams.find((s) => s.codec_type === 'audio')).toMatchObject({ codec_name: 'aac' });
      expect(Number(probed.format.duration)).toBeCloseTo(seconds, 0);
      const boxes = topLevelBoxes(await readFile(file));
      expect(boxes.indexOf('moov')).toBeLessThan(boxes.indexOf('mdat'));
    }

    // The watermark sits bottom right: that corner differs from the plain rendition, the top left does not.
    const plain = await frameAt(path.join(work, '360p-video.mp4'), 1);
    const wmFile = path.join(work, 'wm.mp4');
    await download(h.storage, report.conversions['360p-wm-video']?.object_key ?? '', wmFile);
    const marked = await frameAt(wmFile, 1);
    expect(regionDiff(plain, marked, 640, { x: 640 - 100, y: 360 - 60, w: 80, h: 40 })).toBeGreaterThan(40);
    expect(regionDiff(plain, marked, 640, { x: 10, y: 10, w: 80, h: 40 })).toBeLessThan(8);

    // Muted preview, at most 360p, six seconds.
    const clipFile = path.join(work, 'clip.mp4');
    await download(h.storage, report.conversions.clip_preview?.object_key ?? '', clipFile);
    const clip = await ffprobe(clipFile);
    expect(clip.streams.map((s) => s.codec_type)).toEqual(['video']);
    expect(clip.streams[0]).toMatchObject({ width: 640, height: 360 });
    expect(Number(clip.format.duration)).toBeCloseTo(6, 0);

    // HLS: the master lists the variants the source allows; ffprobe plays it from the stored files.
    const hls = report.conversions['hls-video'];
    expect(hls?.object_key).toMatch(/\/hls-video\/master\.m3u8$/);
    const prefix = (hls?.object_key ?? '').replace(/master\.m3u8$/, '');
    const stored = await h.storage.listKeys(prefix);
    for (const key of stored) await download(h.storage, key, path.join(work, 'hls', key.slice(prefix.length)));
    const master = await readFile(path.join(work, 'hls', 'master.m3u8'), 'utf8');
    expect(master.match(/RESOLUTION=\d+x\d+/g)).toEqual(['RESOLUTION=640x360', 'RESOLUTION=854x480', 'RESOLUTION=1280x720']);
    expect(master).toMatch(/CODECS="avc1\.6400[0-9a-f]{2},mp4a\.40\.2"/);
    const played = await ffprobe(path.join(work, 'hls', 'master.m3u8'));
    expect(
      played.streams
        .filter((s) => s.codec_type === 'video')
        .map((s) => s.height)
        .sort(),
    ).toEqual([360, 480, 720]);
    const variant = await readFile(path.join(work, 'hls', '360p', 'index.m3u8'), 'utf8');
    expect(variant).toContain('#EXT-X-ENDLIST');
    expect((variant.match(/^#EXTINF:([\d.]+)/gm) ?? []).map((l) => Number(l.split(':')[1])).reduce((a, b) => a + b, 0)).toBeCloseTo(seconds, 0);

    // Storyboard: a sprite of 160-px thumbnails and cues covering the whole duration without gaps.
    const board = report.conversions.storyboard;
    expect(board).toMatchObject({ content_type: 'image/jpeg', width: 8 * 160, height: 90 });
    const vttFile = path.join(work, 'storyboard.vtt');
    await download(h.storage, (board?.object_key ?? '').replace(/sprite\.jpg$/, 'storyboard.vtt'), vttFile);
    const cues = [
      ...(await readFile(vttFile, 'utf8')).matchAll(/(\d\d):(\d\d):(\d\d)\.(\d{3}) --> (\d\d):(\d\d):(\d\d)\.(\d{3})\n(sprite\.jpg#xywh=\d+,\d+,160,90)/g),
    ];
    const at = (m: RegExpMatchArray, i: number) => Number(m[i]) * 3600 + Number(m[i + 1]) * 60 + Number(m[i + 2]) + Number(m[i + 3]) / 1000;
    expect(cues).toHaveLength(8);
    expect(at(cues[0] as RegExpMatchArray, 1)).toBe(0);
    cues.slice(1).forEach((m, i) => expect(at(m, 1)).toBe(at(cues[i] as RegExpMatchArray, 5)));
    expect(at(cues[cues.length - 1] as RegExpMatchArray, 5)).toBeCloseTo(seconds, 1);
    const spriteFile = path.join(work, 'sprite.jpg');
    await download(h.storage, board?.object_key ?? '', spriteFile);
    expect((await ffprobe(spriteFile)).streams[0]).toMatchObject({ width: 1280, height: 90 });

    // The job's reports: the four steps in order, progress never going back, ending COMPLETED at 100.
    const reports = h.jobReports.filter((r) => r.job_id === jobId);
    const steps = reports.map((r) => r.step).filter((s, i, all) => all.indexOf(s) === i);
    expect(steps).toEqual(['preprocess', 'transcodes', 'addons', 'postprocess']);
    const progress = reports.map((r) => r.progress);
    progress.slice(1).forEach((p, i) => expect(p).toBeGreaterThanOrEqual(progress[i] as number));
    expect(new Set(progress.filter((p) => p > 5 && p < 85)).size).toBeGreaterThan(2);
    expect(reports[reports.length - 1]).toMatchObject({ state: 'COMPLETED', progress: 100 });
  });

  it("ends a file that is not a video FAILED with ffprobe's reason, and keeps working", async () => {
    const checksum = await h.putOriginal('g1', 'broken', Buffer.concat([Buffer.from('\x00\x00\x00\x18ftypmp42'), Buffer.alloc(4096, 7)]));
    await h.publishJob('g1', 'broken', { checksum, contentType: 'video/mp4' });
    const final = await h.finalReportFor('broken', 60_000);
    expect(final.state).toBe('FAILED');
    expect(final.outputs?.errors.original).toMatch(/not a readable video: .+/);

    const small = await h.putOriginal('g1', 'tiny', await makeVideo({ seconds: 2, width: 320, height: 240, audio: false }));
    await h.publishJob('g1', 'tiny', { checksum: small, contentType: 'video/mp4' }, { keys: ['hls-video', '360p-video'] });
    const report = await h.reportFor('tiny', 60_000);
    // Smaller than the ladder: no 360p (it would upscale), HLS with the source size as its one variant.
    expect(report.skipped).toEqual({ '360p-video': expect.stringContaining('upscale') });
    expect(report.conversions['hls-video']).toMatchObject({ width: 320, height: 240 });
    expect(report.metadata).toMatchObject({ audio_codec: null, width: 320, height: 240 });
  });

  it('makes what the job carries (the settings it was opened with) without asking auth; a job without them reads auth', async () => {
    const checksum = await h.putOriginal('g2', 'carried', await makeVideo({ seconds: 2, width: 320, height: 240, audio: false }));
    // auth would answer SETTINGS (seven keys, a watermark, the storyboard): the job was opened with one key and none.
    const settings = { conversions: { profile: { video: ['clip_preview'] }, watermark_asset_id: null }, addons: { auto: { video: [] } } };
    await h.publishJob('g2', 'carried', { checksum, contentType: 'video/mp4' }, { settings });
    const report = await h.reportFor('carried', 60_000);
    expect(Object.keys(report.conversions)).toEqual(['clip_preview']);
    expect(auth.settingsCalls('g2')).toBe(0);

    // A job opened by the previous release (no settings): auth is asked, as before.
    await h.publishJob(
      'g2',
      'asked',
      { checksum: await h.putOriginal('g2', 'asked', await makeVideo({ seconds: 1, width: 320, height: 240, audio: false })), contentType: 'video/mp4' },
      { keys: [] },
    );
    await h.reportFor('asked', 60_000);
    expect(auth.settingsCalls('g2')).toBe(1);
  });

  it('describes a video with nothing to make from ranges of the stored object, without downloading it', async () => {
    const checksum = await h.putOriginal('g1', 'describe-only', await makeVideo({ seconds: 3, width: 480, height: 270 }));
    await h.publishJob('g1', 'describe-only', { checksum, contentType: 'video/mp4' }, { keys: [] });
    const report = await h.reportFor('describe-only', 60_000);
    expect(report).toMatchObject({ conversions: {}, errors: {}, metadata: { width: 480, height: 270, video_codec: 'h264' } });
    // The line was written before the report was sent, but reaches this process through the child's pipe.
    const phases = await service.waitForLog(/"transcode phases".*"describe-only"|"describe-only".*"transcode phases"/);
    expect(phases).toMatch(/"probe_remote":\d+/);
    expect(phases).not.toMatch(/"download"/);
  });

  it('completes a file with sound and no picture: its audio described, every key skipped', async () => {
    const file = path.join(work, 'sound.mp4');
    await exec('ffmpeg', ['-v', 'error', '-f', 'lavfi', '-i', 'sine=frequency=300:duration=3', '-c:a', 'aac', '-f', 'mp4', file]);
    const checksum = await h.putOriginal('g1', 'sound', await readFile(file));
    await h.publishJob('g1', 'sound', { checksum, contentType: 'video/mp4' });
    const final = await h.finalReportFor('sound', 60_000);
    expect(final.state).toBe('COMPLETED');
    expect(final.outputs).toMatchObject({ conversions: {}, errors: {}, metadata: { video_codec: null, audio_codec: 'aac' } });
    expect(final.outputs?.metadata?.duration).toBeCloseTo(3, 0);
    expect(final.outputs?.skipped?.['360p-video']).toBe('the file has no video stream');
  });

  it('answers /readyz, and stops on SIGTERM with exit code 0', async () => {
    const ready = await fetch(`${service.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({ status: 'ok', checks: { nats: true, s3: true, 'consumer:transcode-jobs': true } });
    service.kill('SIGTERM');
    await expect(service.exited).resolves.toEqual({ code: 0, signal: null });
  });
});
