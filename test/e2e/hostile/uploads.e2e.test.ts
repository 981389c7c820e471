/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are untyped JSON; the assertions check them */
import { deflateRawSync } from 'node:zlib';
import sharp from 'sharp';
import { httpOk, testMinioClient, waitFor } from '@dam/testing';
import { useSuite } from '../suite';

/**
 * Issue 14, hostile uploads: every file below is answered 4xx or stored and processed safely (a final status, a
 * clear error where it cannot be processed), names cannot inject anything into headers, and the suite keeps serving.
 */
const MAX_UPLOAD_BYTES = 8 * 1024 * 1024;
const e2e = useSuite({ upload: { MAX_UPLOAD_BYTES: String(MAX_UPLOAD_BYTES) } });

const auth = () => ({ authorization: `Bearer ${e2e.jwt}` });

async function upload(bytes: Buffer, name: string, type = 'application/octet-stream'): Promise<{ status: number; body: any }> {
  const form = new FormData();
  form.append('file', new Blob([bytes], { type }), name);
  const res = await fetch(`${e2e.suite.upload}/api/v1/assets/new/content/original/upload`, { method: 'POST', headers: auth(), body: form });
  return { status: res.status, body: await res.json() };
}

/** Get Data once processing is over: OK or ERROR, never stuck. */
const settled = (id: string) =>
  waitFor(
    async () => {
      const res = await fetch(`${e2e.suite.base}/api/v1/assets/${id}/data`, { headers: auth() });
      const body = (await res.json()) as any;
      return body.status === 'OK' || body.status === 'ERROR' ? body : undefined;
    },
    { timeoutMs: 60_000, description: `${id} settled` },
  );

async function objectsUnder(prefix: string): Promise<string[]> {
  const names: string[] = [];
  for await (const item of testMinioClient().listObjectsV2(e2e.suite.bucket, prefix, true)) if (item.name) names.push(item.name);
  return names.sort();
}

const download = (id: string) => fetch(`${e2e.suite.base}/api/v1/assets/${id}/content/original/download`, { headers: auth() });

/** A ZIP whose one member inflates to `size` zero bytes (a "zip bomb" at small scale), stored by its name. */
function zipBomb(size: number): Buffer {
  const data = deflateRawSync(Buffer.alloc(size));
  const name = Buffer.from('zeros.bin');
  const local = Buffer.alloc(30);
  local.writeUInt32LE(0x04034b50, 0);
  local.writeUInt16LE(20, 4);
  local.writeUInt16LE(8, 8); // deflate
  local.writeUInt32LE(data.length, 18);
  local.writeUInt32LE(size, 22);
  local.writeUInt16LE(name.length, 26);
  return Buffer.concat([local, name, data]);
}

describe('hostile uploads (issue 14)', () => {
  it('stores an empty file as an empty asset that reaches a final status', async () => {
    const res = await upload(Buffer.alloc(0), 'empty.png', 'image/png');
    expect(res.status).toBe(200);
    expect(res.body.files[0]).toMatchObject({ size: 0, content_type: 'application/octet-stream' });
    expect(['OK', 'ERROR']).toContain((await settled(res.body.files[0].id)).status);
  });

  it('ends a truncated JPEG in a final status with the reason when it cannot be converted', async () => {
    const jpeg = await sharp({ create: { width: 800, height: 600, channels: 3, background: '#777', noise: { type: 'gaussian', mean: 120, sigma: 50 } } })
      .jpeg()
      .toBuffer();
    const res = await upload(jpeg.subarray(0, Math.floor(jpeg.length / 3)), 'cut.jpg', 'image/jpeg');
    expect(res.status).toBe(200);
    const data = await settled(res.body.files[0].id);
    if (data.status === 'ERROR') expect(JSON.stringify(data.errors)).toMatch(/\w/);
    else expect(data.conversions.thumb).toBeDefined(); // libvips may render what arrived: processed safely
  });

  it('sniffs a mislabelled file and a polyglot from their bytes, never from the name or the client type', async () => {
    const png = await sharp({ create: { width: 30, height: 20, channels: 3, background: '#0a0' } })
      .png()
      .toBuffer();
    const mislabelled = await upload(png, 'photo.jpg', 'image/jpeg');
    expect(mislabelled.body.files[0].content_type).toBe('image/png');
    // A GIF header followed by HTML with a script: a GIF to every reader, never served as a page.
    const polyglot = Buffer.concat([
      Buffer.from('GIF89a'),
      Buffer.from([1, 0, 1, 0, 0, 0, 0]),
      Buffer.from('<html><script>alert(document.domain)</script></html>'),
    ]);
    const res = await upload(polyglot, 'page.html', 'text/html');
    expect(res.status).toBe(200);
    const id = res.body.files[0].id;
    expect(res.body.files[0].content_type).toBe('image/gif');
    await settled(id);
    const served = await download(id);
    expect(served.headers.get('x-content-type-options')).toBe('nosniff');
    expect(served.headers.get('content-type')).not.toMatch(/html/);
    await served.body?.cancel();
  });

  it('refuses a file over MAX_UPLOAD_BYTES with 413 and stores nothing of it', async () => {
    const before = await objectsUnder('originals/1/');
    const res = await upload(Buffer.alloc(MAX_UPLOAD_BYTES + 1024, 7), 'big.bin');
    expect(res.status).toBe(413);
    expect(res.body.error.code).toBe('UPLOAD_TOO_LARGE');
    expect(await objectsUnder('originals/1/')).toEqual(before);
  });

  it('ends a 100000x100000 PNG header in ERROR from the header, without decoding it', async () => {
    const png = Buffer.from(
      await sharp({ create: { width: 1, height: 1, channels: 3, background: '#000' } })
        .png()
        .toBuffer(),
    );
    png.writeUInt32BE(100_000, 16);
    png.writeUInt32BE(100_000, 20);
    const res = await upload(png, 'huge.png', 'image/png');
    const data = await settled(res.body.files[0].id);
    expect(data.status).toBe('ERROR');
    expect(data.errors.original).toMatch(/limit|pixels|invalid|corrupt|crc/i);
  });

  it('keeps a zip bomb named .png as the ZIP it is, never inflated', async () => {
    const bomb = zipBomb(200 * 1024 * 1024);
    expect(bomb.length).toBeLessThan(300_000);
    const res = await upload(bomb, 'innocent.png', 'image/png');
    expect(res.status).toBe(200);
    expect(res.body.files[0]).toMatchObject({ content_type: 'application/zip', size: bomb.length });
    const data = await settled(res.body.files[0].id);
    expect(data.status).toBe('OK');
    expect(data.conversions.thumb).toBeUndefined();
  });

  it('keeps names with path traversal, CRLF and 10 KB of unicode inert: stored as text, never in a header raw', async () => {
    const bytes = Buffer.from('plain text');
    for (const name of ['../../../../etc/passwd', 'a\r\nSet-Cookie: stolen=1.txt', `${'é漢🙂'.repeat(1300)}.txt`]) {
      const res = await upload(bytes, name, 'text/plain');
      if (res.status !== 200) {
        expect(res.status).toBeGreaterThanOrEqual(400);
        expect(res.status).toBeLessThan(500);
        expect(res.body.error.code).toMatch(/^[A-Z_]+$/);
        continue;
      }
      const id = res.body.files[0].id;
      expect((await settled(id)).status).toBe('OK');
      const served = await download(id);
      expect(served.status).toBe(200);
      expect(served.headers.get('set-cookie')).toBeNull();
      const disposition = served.headers.get('content-disposition') ?? '';
      expect(disposition).toMatch(/^attachment/);
      expect(disposition).not.toMatch(/[\r\n]/);
      expect(disposition).not.toContain('../');
      expect(Buffer.from(await served.arrayBuffer()).toString()).toBe('plain text');
    }
  });

  it('keeps serving afterwards: every service ready, a normal upload processed', async () => {
    for (const [name, service] of Object.entries(e2e.suite.services)) expect([name, await httpOk(`${service.url}/readyz`)]).toEqual([name, true]);
    const png = await sharp({ create: { width: 300, height: 200, channels: 3, background: '#123456' } })
      .png()
      .toBuffer();
    const res = await upload(png, 'after.png', 'image/png');
    const data = await settled(res.body.files[0].id);
    expect(data.status).toBe('OK');
    expect(data.conversions.thumb).toBeDefined();
  });
});
