import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { originalKey } from '@dam/storage';
import { createDatabase, startJobHarness, startServiceProcess, waitFor, type JobHarness, type ServiceProcess } from '@dam/testing';

/**
 * Security review F7 (issue 30): a small, highly compressible image of 268 MP (a one-colour 16k × 16k PNG is 800 KB)
 * through the addons that decoded their input at full size. The addon runs as its own process with the defaults
 * (MAX_DECODE_PIXELS 40 MP, OCR_MAX_PIXELS 25 MP); its peak RSS (the kernel's high-water mark, VmHWM) is read before
 * and after. Before the fix, background_removal alone held the 805 MB of raw pixels plus its alpha plane and output,
 * and tesseract was given all 268 MP (2.8 GB in tesseract): with the models, past the pod's 2 GiB.
 */
let h: JobHarness;
let service: ServiceProcess;
let dir: string;

/** The service's peak resident memory so far (bytes), from the kernel. */
const peakRss = (): number => Number(/^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${service.pid}/status`, 'utf8'))?.[1]) * 1024;
const MB = 1024 * 1024;

beforeAll(async () => {
  h = await startJobHarness('addon');
  dir = mkdtempSync(path.join(tmpdir(), 'addon-bomb-'));
  // tesseract as the addon runs it, keeping each image it was given (for the test to measure) before reading it.
  const wrapper = path.join(dir, 'tesseract');
  writeFileSync(wrapper, `#!/bin/sh\nif [ "$1" = stdin ]; then f="${dir}/ocr-$$.png"; cat > "$f"; shift; exec tesseract "$f" "$@"; fi\nexec tesseract "$@"\n`);
  chmodSync(wrapper, 0o755);
  mkdirSync(path.join(dir, 'scratch'));
  service = await startServiceProcess(
    'addon',
    h.env({
      MAX_DELIVER: '2',
      RETRY_BACKOFF_MS: '200',
      DATABASE_URL: await createDatabase('addon'),
      TESSERACT_PATH: wrapper,
      // The 268 MP image (800 KB) is read from a file, as a large original is; over 4 MiB is not read at all.
      ORIGINALS_IN_MEMORY_BYTES: String(256 * 1024),
      MAX_ORIGINAL_BYTES: String(4 * MB),
      TMPDIR: path.join(dir, 'scratch'),
    }),
  );
});
afterAll(async () => {
  await service?.stop();
  await h?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const run = async (asset: string, bytes: Buffer, addon: string) => {
  const checksum = await h.putOriginal('7', asset, bytes);
  await h.publishJob('7', asset, { checksum, contentType: 'image/png' }, { type: 'addon', keys: [addon], source_key: originalKey('7', asset), created_by: 3 });
  return h.finalReportFor(asset, 120_000);
};
const flat = (width: number, height: number, png: sharp.PngOptions = {}) =>
  sharp({ create: { width, height, channels: 3, background: '#3a6ea5' }, limitInputPixels: false })
    .png({ compressionLevel: 9, ...png })
    .toBuffer();

describe('addon inputs are decoded shrunk to what the addon needs (security review F7)', () => {
  it('reads a one-colour 16k × 16k PNG (268 MP, 800 KB) in bounded memory, gives bounded results and keeps serving', async () => {
    // Every model loaded first (the detectors at start, ISNet at its first job): what is measured is the decode.
    await waitFor(
      async () => {
        const body = (await (await fetch(`${service.url}/readyz`)).json()) as { models: Record<string, { state: string }> };
        return ['auto_tagging', 'face_recognition'].every((a) => body.models[a]?.state === 'ready');
      },
      { timeoutMs: 60_000, description: 'the detectors loaded' },
    );
    expect(await run('warm-bg', await flat(640, 480), 'background_removal')).toMatchObject({ state: 'COMPLETED' });
    expect(await run('warm-ocr', await flat(640, 480), 'text_extraction')).toMatchObject({ state: 'COMPLETED' });
    const before = peakRss();

    const bomb = await flat(16_383, 16_383);
    expect(bomb.length).toBeLessThan(1024 * 1024);
    const removed = await run('bomb-bg', bomb, 'background_removal');
    const afterBackground = peakRss();
    const read = await run('bomb-ocr', bomb, 'text_extraction');
    const given = readdirSync(dir).filter((f) => f.startsWith('ocr-'));
    const ocrPixels = Math.max(...(await Promise.all(given.map(async (f) => sharp(path.join(dir, f)).metadata()))).map((m) => m.width * m.height));
    const growth = { background_removal: Math.round((afterBackground - before) / MB), both: Math.round((peakRss() - before) / MB) };
    process.stdout.write(
      `addon peak RSS ${Math.round(before / MB)} MB before the 268 MP image; growth ${JSON.stringify(growth)} MB; tesseract given ${ocrPixels} pixels\n`,
    );
    // Before: background_removal's full-size raw pixels alone were 805 MB.
    expect(growth.both).toBeLessThan(600);

    expect(removed.state).toBe('COMPLETED');
    const size = removed.addon_result?.result as { width: number; height: number };
    // At most MAX_DECODE_PIXELS, square as the original.
    expect(size.width * size.height).toBeLessThanOrEqual(40_000_000);
    expect(size.width * size.height).toBeGreaterThan(39_000_000);
    expect(size.width).toBe(size.height);
    expect(read).toMatchObject({ state: 'COMPLETED', addon_result: { result: { text: '', words: [] } } });
    // tesseract (a child process, about 11 bytes a pixel) was given at most OCR_MAX_PIXELS: it held 2.8 GB for 268 MP.
    expect(ocrPixels).toBeLessThanOrEqual(25_000_000);

    // The service is still there, healthy, and takes the next job.
    expect((await fetch(`${service.url}/healthz`)).status).toBe(200);
    expect(await run('after-bomb', await flat(300, 200), 'auto_tagging')).toMatchObject({ state: 'COMPLETED' });
  });

  it('refuses, with the reason and before decoding, what is too large to read or would be decoded whole past the limit', async () => {
    const tooLarge = await run('too-large', await flat(20_000, 14_000), 'text_extraction');
    expect(tooLarge).toMatchObject({ state: 'FAILED', error: expect.stringMatching(/20000×14000 \(280 MP\), above the 268\.4 MP an addon reads/) });
    // An interlaced PNG is decoded whole before it can be shrunk: 49 MP of it is refused, whatever the addon.
    const interlaced = await flat(7000, 7000, { progressive: true });
    for (const addon of ['background_removal', 'auto_tagging']) {
      const report = await run(`interlaced-${addon}`, interlaced, addon);
      expect(report).toMatchObject({
        state: 'FAILED',
        error: expect.stringMatching(/an interlaced PNG of 7000×7000 \(49 MP\): images of this kind are decoded whole, and an addon decodes at most 40 MP/),
      });
    }
    expect((await fetch(`${service.url}/healthz`)).status).toBe(200);
  });

  it('does not read an original over MAX_ORIGINAL_BYTES, and leaves no file of the ones it read', async () => {
    // 5 MB of noise: as many bytes as pixels could be, where memory was the whole file before any decode.
    const noise = await sharp(randomBytes(1300 * 1300 * 3), { raw: { width: 1300, height: 1300, channels: 3 } })
      .png({ compressionLevel: 0 })
      .toBuffer();
    expect(noise.length).toBeGreaterThan(4 * MB);
    const report = await run('too-many-bytes', noise, 'auto_tagging');
    expect(report).toMatchObject({ state: 'FAILED', error: expect.stringMatching(/^the original is 4\.8 MiB, above the 4 MiB an addon reads$/) });
    // A job of an earlier test handed out again on a busy machine may still hold its file for a moment; a leaked one
    // stays for good.
    const scratch = () => readdirSync(path.join(dir, 'scratch')).filter((f) => f.startsWith('dam-addon-'));
    await waitFor(() => scratch().length === 0, { timeoutMs: 20_000, description: 'no scratch file left' }).catch(() => undefined);
    expect(scratch()).toEqual([]);
  });
});
