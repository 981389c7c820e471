import sharp from 'sharp';
import { sampleValue } from '@dam/metrics';
import { scaled, startJobHarness, startServiceProcess, startSettingsStub, waitFor, type JobHarness, type ServiceProcess, type StubAnswer } from '@dam/testing';

jest.setTimeout(scaled(90_000));

const SETTINGS = {
  conversions: {
    custom: {
      thumb: { width: 200, height: 200, fit: 'cover', format: 'webp', quality: 80 },
      narrow: { width: 64, format: 'jpeg', quality: 70 },
    },
    profile: { image: ['smart_imaging', 'thumb', 'narrow'], video: ['360p-video'] },
  },
};

// Group behaviours: `flaky` fails twice then recovers; `down` never answers.
function answer(groupId: string, call: number): StubAnswer {
  if (groupId === 'down') return { status: 503 };
  if (groupId === 'flaky' && call <= 2) return { status: 502 };
  return { status: 200, body: SETTINGS };
}

const png = (width: number, height: number): Promise<Buffer> =>
  sharp({ create: { width, height, channels: 3, background: { r: 30, g: 120, b: 200 } } })
    .png()
    .toBuffer();

describe('conversion service (real NATS, S3, sharp)', () => {
  let h: JobHarness;
  let auth: Awaited<ReturnType<typeof startSettingsStub>>;
  let service: ServiceProcess;

  beforeAll(async () => {
    h = await startJobHarness('conversion');
    auth = await startSettingsStub(h.identities, answer);
    service = await startServiceProcess(
      'conversion',
      // OUTAGE_RETRY_MS 0: each failure counts as a delivery here (the retry in place through outages: test/faults).
      // JOB_PROGRESS_INTERVAL_MS and JOB_START_REPORT_DELAY_MS 0: every report sent (a job this short otherwise sends
      // only COMPLETED).
      h.env({
        AUTH_URL: auth.url,
        MAX_DELIVER: '3',
        RETRY_BACKOFF_MS: '200',
        SETTINGS_CACHE_MS: '0',
        SETTINGS_MAX_AGE_MS: '0',
        OUTAGE_RETRY_MS: '0',
        JOB_PROGRESS_INTERVAL_MS: '0',
        JOB_START_REPORT_DELAY_MS: '0',
      }),
    );
  });

  afterAll(async () => {
    await service?.stop();
    await auth?.close();
    await h?.close();
  });

  it("makes the profile's custom conversions of a PNG, stores them and reports them", async () => {
    const bytes = await png(640, 480);
    const checksum = await h.putOriginal('g1', 'img1', bytes);
    await h.publishJob('g1', 'img1', { checksum, contentType: 'image/png' });

    const report = await h.reportFor('img1');
    const thumbKey = `conversions/g1/img1/${checksum}/thumb.webp`;
    // The report's `outputs` (the harness adds the report's asset id): no ids of their own any more.
    expect(report).toEqual({
      asset_id: 'img1',
      source_checksum: checksum,
      image: { width: 640, height: 480 },
      conversions: {
        // The delivery rendition: never enlarged, so a 640x480 source stays 640x480 (WebP).
        smart_imaging: {
          object_key: `conversions/g1/img1/${checksum}/smart_imaging.webp`,
          content_type: 'image/webp',
          width: 640,
          height: 480,
          size: expect.any(Number),
        },
        thumb: { object_key: thumbKey, content_type: 'image/webp', width: 200, height: 200, size: expect.any(Number) },
        narrow: {
          object_key: `conversions/g1/img1/${checksum}/narrow.jpg`,
          content_type: 'image/jpeg',
          width: 64,
          height: 48,
          size: expect.any(Number),
        },
      },
      errors: {},
      metadata: { ColorMode: 'RGB', ColorSpace: 'sRGB', thumbhash: expect.any(String), phash: expect.stringMatching(/^[0-9a-f]{16}$/) },
    });

    const stat = await h.storage.stat(thumbKey);
    expect(stat).toMatchObject({ size: report.conversions.thumb?.size, contentType: 'image/webp' });
    const thumb = await h.storage.getBuffer(thumbKey);
    const decoded = await sharp(thumb).raw().toBuffer({ resolveWithObject: true });
    expect(decoded.info).toMatchObject({ width: 200, height: 200 });
    expect((await sharp(thumb).metadata()).format).toBe('webp');
    await waitFor(() => service.logs().some((l) => /"msg":"conversion finished"/.test(l) && l.includes('"img1"')));
  });

  it('reads EXIF fields, and a perceptual hash that barely moves for a re-encoded copy', async () => {
    const photo = await sharp({ create: { width: 320, height: 240, channels: 3, background: '#48c' } })
      .composite([
        {
          input: await sharp({ create: { width: 100, height: 80, channels: 3, background: '#fd2' } })
            .png()
            .toBuffer(),
          left: 30,
          top: 40,
        },
      ])
      .jpeg({ quality: 90 })
      .withExif({ IFD0: { Make: 'Canon', Model: 'EOS R5', Artist: 'Ann Example', Copyright: '(c) ACME', ImageDescription: 'A test card' } })
      .toBuffer();
    const checksum = await h.putOriginal('g1', 'exif', photo);
    await h.publishJob('g1', 'exif', { checksum, contentType: 'image/jpeg' });
    const report = await h.reportFor('exif');
    expect(report.metadata).toMatchObject({ ColorMode: 'RGB', exif: { Artist: 'Ann Example', Copyright: '(c) ACME', Description: 'A test card' } });
    expect(report.metadata?.exif).not.toHaveProperty('GPS');

    // A natural-looking picture (gradients and a shape), a smaller re-encoded copy of it, and a different picture.
    const w = 320;
    const hgt = 240;
    const raw = Buffer.alloc(w * hgt * 3);
    for (let y = 0; y < hgt; y++) {
      for (let x = 0; x < w; x++) {
        const i = (y * w + x) * 3;
        raw[i] = (x * 255) / w;
        raw[i + 1] = (y * 255) / hgt;
        raw[i + 2] = x > 100 && x < 200 && y > 60 && y < 160 ? 230 : 40;
      }
    }
    const picture = await sharp(raw, { raw: { width: w, height: hgt, channels: 3 } })
      .jpeg({ quality: 90 })
      .toBuffer();
    const copy = await sharp(picture).resize(160).jpeg({ quality: 50 }).toBuffer();
    const hashOf = async (id: string, bytes: Buffer) => {
      await h.publishJob('g1', id, { checksum: await h.putOriginal('g1', id, bytes), contentType: 'image/jpeg' });
      return String((await h.reportFor(id)).metadata?.phash);
    };
    const distance = (a: string, b: string) =>
      [...a].reduce((n, c, i) => n + ((parseInt(c, 16) ^ parseInt(b[i] ?? '0', 16)).toString(2).split('1').length - 1), 0);
    const [original, smaller] = [await hashOf('pic', picture), await hashOf('pic-copy', copy)];
    expect(distance(original, smaller)).toBeLessThanOrEqual(8);
    expect(distance(original, String(report.metadata?.phash))).toBeGreaterThan(16);
  });

  it('honours the EXIF orientation of a JPEG', async () => {
    // Stored 300x100 with orientation 6 (rotate 90°): displayed 100x300.
    const bytes = await sharp({ create: { width: 300, height: 100, channels: 3, background: '#888' } })
      .jpeg()
      .withMetadata({ orientation: 6 })
      .toBuffer();
    const checksum = await h.putOriginal('g1', 'rotated', bytes);
    await h.publishJob('g1', 'rotated', { checksum, contentType: 'image/jpeg' });

    const report = await h.reportFor('rotated');
    expect(report.image).toEqual({ width: 100, height: 300 });
    expect(report.conversions.narrow).toMatchObject({ width: 64, height: 192 });
  });

  it('reports a corrupt image at once, without retrying', async () => {
    const bytes = Buffer.concat([(await png(50, 50)).subarray(0, 40), Buffer.from('definitely not the rest of a png')]);
    const checksum = await h.putOriginal('g1', 'corrupt', bytes);
    await h.publishJob('g1', 'corrupt', { checksum, contentType: 'image/png' });

    const report = await h.reportFor('corrupt');
    expect(report).toMatchObject({ source_checksum: checksum, image: null, conversions: {} });
    expect(Object.keys(report.errors)).toEqual(['original']);
    expect(report.errors.original).toMatch(/not a decodable image|cannot be decoded/);
    const started = service.logs().filter((l) => /"msg":"conversion started"/.test(l) && l.includes('"corrupt"'));
    expect(started).toHaveLength(1);
  });

  it('crops a banner longer than 3:1 to 3:1 for smart_imaging, keeping the salient region', async () => {
    // A 1200x200 banner: grey, with a bright square near its right end where attention should settle.
    const banner = await sharp({ create: { width: 1200, height: 200, channels: 3, background: '#777' } })
      .composite([
        {
          input: await sharp({ create: { width: 120, height: 120, channels: 3, background: '#f00' } })
            .png()
            .toBuffer(),
          left: 1000,
          top: 40,
        },
      ])
      .png()
      .toBuffer();
    const checksum = await h.putOriginal('g1', 'banner', banner);
    await h.publishJob('g1', 'banner', { checksum, contentType: 'image/png' }, { keys: ['smart_imaging'] });
    const report = await h.reportFor('banner');
    expect(report.conversions.smart_imaging).toMatchObject({ width: 600, height: 200, content_type: 'image/webp' });
    const { channels } = await sharp(await h.storage.getBuffer(report.conversions.smart_imaging?.object_key ?? '')).stats();
    // The red square is inside the crop: red dominates green somewhere in the output.
    expect((channels[0]?.max ?? 0) - (channels[1]?.min ?? 0)).toBeGreaterThan(150);
  });

  it('makes a Deep Zoom pyramid whose tile count matches the level math, the descriptor stored last', async () => {
    const [w, hgt] = [1000, 600];
    const checksum = await h.putOriginal('g1', 'zoom', await png(w, hgt));
    await h.publishJob('g1', 'zoom', { checksum, contentType: 'image/png' }, { keys: ['deepzoom'] });
    const report = await h.reportFor('zoom');
    const base = `conversions/g1/zoom/${checksum}/deepzoom/`;
    expect(report.conversions.deepzoom).toMatchObject({ object_key: `${base}image.dzi`, content_type: 'application/xml', width: w, height: hgt });
    const keys = await h.storage.listKeys(base);
    const maxLevel = Math.ceil(Math.log2(Math.max(w, hgt)));
    let tiles = 0;
    for (let level = 0; level <= maxLevel; level++) {
      const scale = 2 ** (level - maxLevel);
      tiles += Math.ceil(Math.ceil(w * scale) / 254) * Math.ceil(Math.ceil(hgt * scale) / 254);
    }
    expect(keys.filter((k) => k.endsWith('.jpeg'))).toHaveLength(tiles);
    expect(keys).toContain(`${base}image_files/${maxLevel}/3_2.jpeg`);
    const dzi = (await h.storage.getBuffer(`${base}image.dzi`)).toString('utf8');
    expect(dzi).toMatch(/TileSize="254"/);
    expect(dzi).toMatch(/Width="1000"/);
    expect(dzi).toMatch(/Height="600"/);
  });

  it('reports the job as started, in progress and finished, under its job id and worker', async () => {
    const bytes = await png(120, 90);
    const checksum = await h.putOriginal('g1', 'tracked', bytes);
    const jobId = await h.publishJob('g1', 'tracked', { checksum, contentType: 'image/png' }, { job_id: 4242, attempt: 1, id: 'job-4242-run-1' });

    const final = await h.finalReportFor('tracked');
    const mine = h.jobReports.filter((r) => r.job_id === jobId);
    expect(mine[0]).toMatchObject({ state: 'STARTED', step: 'conversions', progress: 0, attempt: 1, worker: expect.stringMatching(/^conversion@/) });
    const progress = mine.filter((r) => r.state === 'PROGRESS').map((r) => r.progress);
    expect(progress.length).toBeGreaterThan(0);
    expect(progress).toEqual([...progress].sort((a, b) => a - b));
    expect(Math.max(...progress)).toBeLessThan(100);
    expect(final).toMatchObject({ id: 'job-4242-done', state: 'COMPLETED', progress: 100, job_id: 4242 });
    expect(final.outputs?.conversions.thumb).toMatchObject({ width: 200, height: 200 });
  });

  it('makes only the keys a re-run names', async () => {
    const bytes = await png(100, 100);
    const checksum = await h.putOriginal('g1', 'rerun', bytes);
    await h.publishJob('g1', 'rerun', { checksum, contentType: 'image/png' }, { keys: ['narrow'] });
    const report = await h.reportFor('rerun');
    expect(Object.keys(report.conversions)).toEqual(['narrow']);
    expect(await h.storage.stat(`conversions/g1/rerun/${checksum}/thumb.webp`)).toBeNull();
  });

  it('makes what the job carries (the settings it was opened with) without asking auth; a job without them reads auth', async () => {
    const bytes = await png(300, 200);
    const checksum = await h.putOriginal('g2', 'carried', bytes);
    // auth would answer SETTINGS (smart_imaging, thumb, narrow): the job was opened with another profile.
    const settings = { conversions: { profile: { image: ['wide'] }, custom: { wide: { width: 150, format: 'png' } } }, metadata: { keep_gps: false } };
    await h.publishJob('g2', 'carried', { checksum, contentType: 'image/png' }, { settings });
    const report = await h.reportFor('carried');
    expect(Object.keys(report.conversions)).toEqual(['wide']);
    expect(report.conversions.wide).toMatchObject({ content_type: 'image/png', width: 150, height: 100 });
    expect(auth.settingsCalls('g2')).toBe(0);

    // A job opened by the previous release (no settings): the group's settings, from auth, as before.
    await h.publishJob('g2', 'asked', { checksum: await h.putOriginal('g2', 'asked', bytes), contentType: 'image/png' });
    expect(Object.keys((await h.reportFor('asked')).conversions).sort()).toEqual(['narrow', 'smart_imaging', 'thumb']);
    expect(auth.settingsCalls('g2')).toBe(1);
  });

  it('converts every input type: JPEG, PNG, WebP, AVIF, TIFF, GIF and SVG (rasterised)', async () => {
    const base = sharp({ create: { width: 400, height: 300, channels: 3, background: { r: 200, g: 40, b: 90 } } });
    const svg = Buffer.from(
      '<svg xmlns="http://www.w3.org/2000/svg" width="400" height="300"><rect width="400" height="300" fill="#c82a5a"/><script>alert(1)</script></svg>',
    );
    const inputs: Array<[string, string, Buffer]> = [
      ['jpeg', 'image/jpeg', await base.clone().jpeg().toBuffer()],
      ['png', 'image/png', await base.clone().png().toBuffer()],
      ['webp', 'image/webp', await base.clone().webp().toBuffer()],
      ['avif', 'image/avif', await base.clone().avif().toBuffer()],
      ['tiff', 'image/tiff', await base.clone().tiff().toBuffer()],
      ['gif', 'image/gif', await base.clone().gif().toBuffer()],
      ['svg', 'image/svg+xml', svg],
    ];
    for (const [name, contentType, bytes] of inputs) {
      const checksum = await h.putOriginal('g1', `in-${name}`, bytes);
      await h.publishJob('g1', `in-${name}`, { checksum, contentType });
    }
    for (const [name] of inputs) {
      const report = await h.reportFor(`in-${name}`);
      expect({ name, errors: report.errors, image: report.image }).toEqual({ name, errors: {}, image: { width: 400, height: 300 } });
      const thumb = await h.storage.getBuffer(report.conversions.thumb?.object_key ?? '');
      expect(await sharp(thumb).metadata()).toMatchObject({ format: 'webp', width: 200, height: 200 });
      // The colour survived the decode (SVG rasterised, not served back as markup).
      const [r, g, b] = await sharp(thumb).raw().toBuffer();
      expect(Math.abs((r ?? 0) - 200) + Math.abs((g ?? 0) - 40) + Math.abs((b ?? 0) - 90)).toBeLessThan(30);
    }
  });

  it('keeps an animated GIF animated in WebP outputs and takes its first frame for JPEG', async () => {
    const colours = [
      [255, 0, 0],
      [0, 255, 0],
      [0, 0, 255],
    ];
    const frames = await Promise.all(
      colours.map(([r, g, b]) =>
        sharp({ create: { width: 300, height: 200, channels: 3, background: { r: r ?? 0, g: g ?? 0, b: b ?? 0 } } })
          .png()
          .toBuffer(),
      ),
    );
    const gif = await sharp(frames, { join: { animated: true } })
      .gif({ delay: [100, 100, 100], loop: 0 })
      .toBuffer();
    const checksum = await h.putOriginal('g1', 'anim', gif);
    await h.publishJob('g1', 'anim', { checksum, contentType: 'image/gif' });
    const report = await h.reportFor('anim');
    expect(report.image).toEqual({ width: 300, height: 200 });
    expect(report.conversions.thumb).toMatchObject({ width: 200, height: 200 });
    expect(await sharp(await h.storage.getBuffer(report.conversions.thumb?.object_key ?? '')).metadata()).toMatchObject({
      format: 'webp',
      pages: 3,
      width: 200,
    });
    const narrow = await h.storage.getBuffer(report.conversions.narrow?.object_key ?? '');
    expect(await sharp(narrow).metadata()).toMatchObject({ format: 'jpeg', width: 64, height: 43 });
    const [r, g, b] = await sharp(narrow).raw().toBuffer();
    expect([r, g, b].map((v) => Math.round((v ?? 0) / 64))).toEqual([4, 0, 0]);
  });

  it('reports an image type sharp cannot decode as done with nothing made, so the asset is not stuck', async () => {
    const bytes = Buffer.from([0, 0, 1, 0, 1, 0, 16, 16, 0, 0, 1, 0, 32, 0]);
    const checksum = await h.putOriginal('g1', 'icon', bytes);
    await h.publishJob('g1', 'icon', { checksum, contentType: 'image/x-icon' });

    const report = await h.reportFor('icon');
    expect(report).toMatchObject({ source_checksum: checksum, image: null, conversions: {}, errors: {} });
    expect(service.logs().some((l) => /"msg":"conversion started"/.test(l) && l.includes('"icon"'))).toBe(false);
  });

  it('retries while auth is down and converts once it answers', async () => {
    const bytes = await png(300, 300);
    const checksum = await h.putOriginal('flaky', 'img2', bytes);
    await h.publishJob('flaky', 'img2', { checksum, contentType: 'image/png' });

    const report = await h.reportFor('img2');
    expect(auth.settingsCalls('flaky')).toBe(3);
    expect(report.errors).toEqual({});
    expect(report.conversions.thumb).toMatchObject({ width: 200, height: 200 });
  });

  it('reports an error once every delivery failed', async () => {
    const bytes = await png(20, 20);
    const checksum = await h.putOriginal('down', 'img3', bytes);
    await h.publishJob('down', 'img3', { checksum, contentType: 'image/png' });

    const report = await h.reportFor('img3');
    expect(auth.settingsCalls('down')).toBe(3);
    expect(report).toMatchObject({ source_checksum: checksum, image: null, conversions: {} });
    expect(report.errors.original).toMatch(/after every retry.*503/);
  });

  it('exports conversion and consumer metrics on /metrics', async () => {
    const text = await (await fetch(`${service.url}/metrics`)).text();
    const of = (name: string, labels: Record<string, string>) => sampleValue(text, name, { service: 'conversion', ...labels }) ?? 0;
    expect(of('conversions_total', { key: 'thumb', outcome: 'ok' })).toBeGreaterThan(0);
    expect(of('conversions_total', { key: 'narrow', outcome: 'ok' })).toBeGreaterThan(0);
    // The corrupt image and the one whose every delivery failed.
    expect(of('conversions_total', { key: 'original', outcome: 'error' })).toBeGreaterThan(0);
    expect(of('conversion_duration_seconds_count', { outcome: 'ok' })).toBeGreaterThan(0);
    expect(of('conversion_duration_seconds_count', { outcome: 'failed' })).toBeGreaterThan(0);
    const durable = 'conversion-jobs';
    expect(of('events_messages_handled_total', { durable, outcome: 'ack' })).toBeGreaterThan(0);
    expect(of('events_messages_handled_total', { durable, outcome: 'nak' })).toBeGreaterThan(0);
    expect(of('events_messages_handled_total', { durable, outcome: 'dead_letter' })).toBeGreaterThan(0);
  });

  it('stops on SIGTERM with exit code 0', async () => {
    service.kill('SIGTERM');
    await expect(service.exited).resolves.toEqual({ code: 0, signal: null });
  });
});
