import { readFileSync } from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import { originalKey } from '@dam/storage';
import { createDatabase, startJobHarness, startServiceProcess, waitFor, type JobHarness, type ServiceProcess } from '@dam/testing';

/** Photographs shipped with the repository (CC0 / public domain; see the folder's README). */
const FIXTURES = path.join(__dirname, '..', '..', '..', 'test', 'fixtures', 'images');

let h: JobHarness;
let service: ServiceProcess;

beforeAll(async () => {
  h = await startJobHarness('addon');
  service = await startServiceProcess('addon', h.env({ MAX_DELIVER: '2', RETRY_BACKOFF_MS: '200', DATABASE_URL: await createDatabase('addon') }));
});
afterAll(async () => {
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
    const report = await job('tag2', await sharp({ create: { width: 300, height: 500, channels: 3, background: '#1f4fd0' } }).png().toBuffer(), ['auto_tagging']);
    expect(report.addon_result?.result).toEqual({ labels: [{ label: 'blue', confidence: 1 }, { label: 'portrait', confidence: 1 }], best_guess: [] });
  });
});

describe('the face_recognition addon', () => {
  type Faces = { faces: Array<{ box: { x: number; y: number; width: number; height: number }; confidence: number; person_id: string }> };
  const facesOf = async (asset: string, bytes: Buffer, group = '7') => {
    const checksum = await h.putOriginal(group, asset, bytes);
    await h.publishJob(group, asset, { checksum, contentType: 'image/jpeg' }, { type: 'addon', keys: ['face_recognition'], source_key: originalKey(group, asset), created_by: 3 });
    const report = await h.finalReportFor(asset, 60_000);
    expect(report.state).toBe('COMPLETED');
    return (report.addon_result?.result as Faces).faces;
  };

  it('gives the same person to the same face in two pictures, another to a different face, and boxes in the original\'s pixels', async () => {
    const astronaut = readFileSync(path.join(FIXTURES, 'astronaut.jpg'));
    const [first] = await facesOf('face-a', astronaut);
    expect(first).toMatchObject({ confidence: expect.any(Number), person_id: expect.stringMatching(/^person_[0-9a-f]{16}$/) });
    expect(first!.confidence).toBeGreaterThan(0.8);
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
    expect(await facesOf('face-e', await sharp({ create: { width: 200, height: 200, channels: 3, background: '#888' } }).jpeg().toBuffer())).toEqual([]);
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
    const blank = await job('ocr2', await sharp({ create: { width: 400, height: 300, channels: 3, background: '#4a7' } }).png().toBuffer());
    expect(blank).toMatchObject({ state: 'COMPLETED', addon_result: { addon: 'text_extraction', result: { text: '', words: [] } } });
    const broken = await job('ocr3', Buffer.from('not an image at all'));
    expect(broken.state).toBe('FAILED');
    expect(broken.error).toMatch(/cannot be read/);
  });

  it('reports an addon this version does not ship as FAILED', async () => {
    const report = await job('bg1', await rendered(['x']), ['background_removal']);
    expect(report).toMatchObject({ state: 'FAILED', error: expect.stringMatching(/not available/) });
  });

  it('answers /readyz with tesseract found and the detector loaded, and exits 0 on SIGTERM', async () => {
    await waitFor(async () => (await fetch(`${service.url}/readyz`)).status === 200, { description: 'every model loaded' });
    expect(await (await fetch(`${service.url}/readyz`)).json()).toMatchObject({ checks: { text_extraction: true, auto_tagging: true, face_recognition: true } });
    service.kill('SIGTERM');
    await expect(service.exited).resolves.toEqual({ code: 0, signal: null });
  });
});

