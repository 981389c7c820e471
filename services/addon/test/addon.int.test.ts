import { readFileSync } from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import { createPool, type Pool } from '@dam/db';
import { addonStatusClient, connectNats } from '@dam/events';
import { conversionKey, originalKey } from '@dam/storage';
import { createDatabase, startJobHarness, startServiceProcess, waitFor, type JobHarness, type ServiceProcess } from '@dam/testing';

/** Photographs shipped with the repository (CC0 / public domain; see the folder's README). */
const FIXTURES = path.join(__dirname, '..', '..', '..', 'test', 'fixtures', 'images');

let h: JobHarness;
let service: ServiceProcess;
let db: Pool;
/** /readyz's first 200, read as soon as the service was ready: before its models had loaded. */
let firstReady: { status: number; body: Readiness };

interface Readiness {
  status: string;
  checks: Record<string, boolean>;
  models: Record<string, { state: string; reason?: string }>;
}
const readyz = async (url: string) => {
  const res = await fetch(`${url}/readyz`);
  return { status: res.status, body: (await res.json()) as Readiness };
};

beforeAll(async () => {
  h = await startJobHarness('addon');
  const databaseUrl = await createDatabase('addon');
  db = createPool(databaseUrl);
  service = await startServiceProcess('addon', h.env({ MAX_DELIVER: '2', RETRY_BACKOFF_MS: '200', DATABASE_URL: databaseUrl }));
  // The first 200 after the start (a check of a busy machine's PostgreSQL, NATS or S3 may miss its 2 s once).
  firstReady = await waitFor(
    async () => {
      const r = await readyz(service.url);
      return r.status === 200 ? r : undefined;
    },
    { description: 'the addon ready' },
  );
});
afterAll(async () => {
  await db?.end();
  await service?.stop();
  await h?.close();
});

/** A sentence rendered as a picture (black on white, as a scanned page would be). */
const rendered = (lines: string[]) =>
  sharp(
    Buffer.from(
      `<svg xmlns="http://www.w3.org/2000/svg" width="1200" height="${80 + lines.length * 70}"><rect width="100%" height="100%" fill="white"/>` +
        lines.map((l, i) => `<text x="40" y="${80 + i * 70}" font-family="DejaVu Sans, sans-serif" font-size="44" fill="black">${l}</text>`).join('') +
        '</svg>',
    ),
  )
    .png()
    .toBuffer();

const job = async (asset: string, bytes: Buffer, keys = ['text_extraction'], createdBy = 3) => {
  const checksum = await h.putOriginal('7', asset, bytes);
  await h.publishJob('7', asset, { checksum, contentType: 'image/png' }, { type: 'addon', keys, source_key: originalKey('7', asset), created_by: createdBy });
  return h.finalReportFor(asset, 60_000);
};

describe('the auto_tagging addon', () => {
  it('finds the cup in a photograph of coffee, with what every image has: its colour and orientation', async () => {
    const report = await job('tag1', readFileSync(path.join(FIXTURES, 'coffee.jpg')), ['auto_tagging']);
    expect(report.state).toBe('COMPLETED');
    const result = report.addon_result?.result as { labels: Array<{ label: string; confidence: number }>; best_guess: string[] };
    expect(result.labels.find((l) => l.label === 'cup')?.confidence).toBeGreaterThanOrEqual(0.3);
    expect(result.best_guess).toEqual(['cup']);
    expect(result.labels.map((l) => l.label)).toContain('landscape');
  });

  it('finds no object on a flat colour: its colour and orientation only', async () => {
    const report = await job(
      'tag2',
      await sharp({ create: { width: 300, height: 500, channels: 3, background: '#1f4fd0' } })
        .png()
        .toBuffer(),
      ['auto_tagging'],
    );
    expect(report.addon_result?.result).toEqual({
      labels: [
        { label: 'blue', confidence: 1 },
        { label: 'portrait', confidence: 1 },
      ],
      best_guess: [],
    });
  });
});

describe('the face_recognition addon', () => {
  type Faces = { faces: Array<{ box: { x: number; y: number; width: number; height: number }; confidence: number; person_id: string }> };
  const facesOf = async (asset: string, bytes: Buffer, group = '7') => {
    const checksum = await h.putOriginal(group, asset, bytes);
    await h.publishJob(
      group,
      asset,
      { checksum, contentType: 'image/jpeg' },
      { type: 'addon', keys: ['face_recognition'], source_key: originalKey(group, asset), created_by: 3 },
    );
    const report = await h.finalReportFor(asset, 60_000);
    expect(report.state).toBe('COMPLETED');
    return (report.addon_result?.result as Faces).faces;
  };

  it("gives the same person to the same face in two pictures, another to a different face, and boxes in the original's pixels", async () => {
    const astronaut = readFileSync(path.join(FIXTURES, 'astronaut.jpg'));
    const [first] = await facesOf('face-a', astronaut);
    expect(first).toMatchObject({ confidence: expect.any(Number), person_id: expect.stringMatching(/^person_[0-9a-f]{16}$/) });
    expect(first!.confidence).toBeGreaterThan(0.8);
    // Run again on the same original: the same person, who is not given the face a second time.
    const rerun = await h.publishJob(
      '7',
      'face-a',
      { checksum: await h.putOriginal('7', 'face-a', astronaut), contentType: 'image/jpeg' },
      { type: 'addon', keys: ['face_recognition'], source_key: originalKey('7', 'face-a'), created_by: 3 },
    );
    const rerunFaces = ((await h.finalReportOfJob(rerun, 60_000)).addon_result?.result as Faces).faces;
    expect(rerunFaces).toEqual([first]);
    expect((await db.query('SELECT faces FROM people WHERE person_id = $1', [first!.person_id])).rows).toEqual([{ faces: 1 }]);
    // The face is in the upper middle of the 384-pixel picture.
    expect(first!.box.x).toBeGreaterThan(60);
    expect(first!.box.x + first!.box.width).toBeLessThan(384);
    const mirrored = await sharp(astronaut).flop().resize(300).jpeg().toBuffer();
    const [again] = await facesOf('face-b', mirrored);
    expect(again!.person_id).toBe(first!.person_id);
    const [other] = await facesOf('face-c', readFileSync(path.join(FIXTURES, 'camera.jpg')));
    expect(other!.person_id).not.toBe(first!.person_id);
    // Another group knows none of this group's people.
    const [elsewhere] = await facesOf('face-d', astronaut, '8');
    expect(elsewhere!.person_id).not.toBe(first!.person_id);
    // No face: an empty list.
    expect(
      await facesOf(
        'face-e',
        await sharp({ create: { width: 200, height: 200, channels: 3, background: '#888' } })
          .jpeg()
          .toBuffer(),
      ),
    ).toEqual([]);
  });
});

describe('the background_removal addon', () => {
  /** A subject on a plain background: a figure (head and body) on a light, even backdrop. */
  const figure = (width: number, height: number) =>
    sharp(
      Buffer.from(
        `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 640 480"><rect width="640" height="480" fill="#dfe8ef"/>` +
          '<circle cx="320" cy="170" r="70" fill="#e8b090"/><rect x="230" y="240" width="180" height="240" rx="40" fill="#c33"/></svg>',
      ),
    )
      .jpeg()
      .toBuffer();

  it('stores the original as a PNG whose alpha keeps the subject and clears the background, at the original size', async () => {
    const asset = 'bg1';
    const checksum = await h.putOriginal('7', asset, await figure(1280, 960));
    await h.publishJob(
      '7',
      asset,
      { checksum, contentType: 'image/jpeg' },
      { type: 'addon', keys: ['background_removal'], source_key: originalKey('7', asset), created_by: 3 },
    );
    const report = await h.finalReportFor(asset, 120_000);
    expect(report.state).toBe('COMPLETED');
    const key = conversionKey('7', asset, checksum, 'background_removal', 'png');
    expect(report.outputs).toMatchObject({
      source_checksum: checksum,
      conversions: { background_removal: { object_key: key, content_type: 'image/png', width: 1280, height: 960 } },
    });
    const png = await h.storage.getBuffer(key);
    expect(report.addon_result).toEqual({ addon: 'background_removal', result: { key: 'background_removal', width: 1280, height: 960, size: png.length } });
    const { data, info } = await sharp(png).raw().toBuffer({ resolveWithObject: true });
    expect(info).toMatchObject({ width: 1280, height: 960, channels: 4 });
    const alphaAt = (x: number, y: number) => data[(y * info.width + x) * 4 + 3] as number;
    // Every corner is background; the head and the body are the subject.
    for (const [x, y] of [
      [5, 5],
      [1274, 5],
      [5, 954],
      [1274, 954],
    ] as const)
      expect(alphaAt(x, y)).toBeLessThan(16);
    expect(alphaAt(640, 340)).toBeGreaterThan(240);
    expect(alphaAt(640, 700)).toBeGreaterThan(240);
  });
});

describe('the text_extraction addon', () => {
  it('reads a rendered sentence exactly, with its words of three or more characters', async () => {
    const report = await job('ocr1', await rendered(['The quick brown fox jumps', 'over the lazy dog 2026']));
    expect(report.state).toBe('COMPLETED');
    expect(report.addon_result).toEqual({
      addon: 'text_extraction',
      result: { text: 'The quick brown fox jumps\nover the lazy dog 2026', words: ['The', 'quick', 'brown', 'fox', 'jumps', 'over', 'lazy', 'dog', '2026'] },
    });
  });

  it('finds no text on a flat colour, and fails a file that is not an image with the reason', async () => {
    const blank = await job(
      'ocr2',
      await sharp({ create: { width: 400, height: 300, channels: 3, background: '#4a7' } })
        .png()
        .toBuffer(),
    );
    expect(blank).toMatchObject({ state: 'COMPLETED', addon_result: { addon: 'text_extraction', result: { text: '', words: [] } } });
    const broken = await job('ocr3', Buffer.from('not an image at all'));
    expect(broken.state).toBe('FAILED');
    expect(broken.error).toMatch(/cannot be read/);
  });

  it('reports an addon this service does not run as FAILED', async () => {
    const report = await job('sb1', await rendered(['x']), ['storyboard']);
    expect(report).toMatchObject({ state: 'FAILED', error: expect.stringMatching(/not available/) });
  });

  it('is ready to take jobs while its models still load, and /readyz names their state apart', async () => {
    // The face models load after the object models (one after the other), so they cannot have loaded yet.
    expect(firstReady.status).toBe(200);
    expect(firstReady.body.checks).toEqual({ postgres: true, nats: true, s3: true, 'consumer:addon-jobs': true });
    // Still loading on most machines; an idle fast one may have finished already (a clean-clone run saw `ready`).
    expect(['loading', 'ready']).toContain(firstReady.body.models.face_recognition?.state);
    expect(firstReady.body.models.text_extraction).toEqual({ state: 'ready' });
  });

  it('tells metadata when an addon cannot run (tesseract missing), and /readyz says so', async () => {
    const broken = await startServiceProcess('addon', h.env({ TESSERACT_PATH: '/nonexistent/tesseract', DATABASE_URL: await createDatabase('addon') }), {
      waitReady: false,
    });
    try {
      const ask = addonStatusClient(await connectNats(h.nats.url, 'metadata', h.nats.seed('metadata')), { cacheMs: 0 });
      // Both replicas answer in turn (one queue group): the broken one says why.
      expect(await waitFor(() => ask('text_extraction'), { description: 'the broken replica answering' })).toMatch(
        /tesseract with the eng language is not installed/,
      );
      // Still ready for the jobs it can run; the addon it cannot is named with the reason.
      const answer = await waitFor(() => readyz(broken.url).catch(() => undefined), { description: 'the broken replica listening' });
      expect(answer.status).toBe(200);
      expect(answer.body.models.text_extraction).toEqual({
        state: 'failed',
        reason: expect.stringMatching(/tesseract with the eng language is not installed/),
      });
    } finally {
      await broken.stop();
    }
  });

  it('answers /readyz with tesseract found and the detectors loaded, and exits 0 on SIGTERM', async () => {
    const loaded = await waitFor(
      async () => {
        const answer = await readyz(service.url);
        return Object.values(answer.body.models).every((m) => m.state === 'ready') && answer;
      },
      { timeoutMs: 60_000, description: 'every model loaded' },
    );
    expect(loaded).toMatchObject({ status: 200, body: { status: 'ok' } });
    expect(loaded.body.models).toEqual({
      text_extraction: { state: 'ready' },
      auto_tagging: { state: 'ready' },
      face_recognition: { state: 'ready' },
      background_removal: { state: 'ready' },
    });
    service.kill('SIGTERM');
    await expect(service.exited).resolves.toEqual({ code: 0, signal: null });
  });
});
