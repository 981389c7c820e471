import { createHash } from 'node:crypto';
import sharp from 'sharp';
import * as tus from 'tus-js-client';
import { useSuite } from './suite';

/** CONTRACT §12: upload keys, and resumable uploads over tus on {upload}, through the whole suite. */
const e2e = useSuite();
const { call, settled } = e2e.api;
/** The ADMIN's upload key: the rotation test moves it on. */
let uploadkey: string;
beforeAll(() => {
  uploadkey = e2e.admin.uploadkey;
});

/** One resumable upload with tus-js-client (the client Uppy's tus plugin runs); the asset id from X-Asset-Id. */
function tusUpload(
  bytes: Buffer,
  name: string,
  filetype: string,
  auth: { headers?: Record<string, string>; query?: string },
  chunkSize = 5 * 1024 * 1024,
): Promise<string> {
  let assetId: string | undefined;
  return new Promise((resolve, reject) => {
    const u = new tus.Upload(bytes, {
      endpoint: `${e2e.suite.upload}/api/v1/uploads/tus${auth.query ?? ''}`,
      chunkSize,
      retryDelays: [],
      ...(auth.headers ? { headers: auth.headers } : {}),
      metadata: { filename: name, filetype, custom_metadata: JSON.stringify({ data: { via: 'tus' } }) },
      onAfterResponse: (_req, res) => {
        assetId = res.getHeader('X-Asset-Id') ?? assetId;
      },
      onError: reject,
      onSuccess: () => (assetId ? resolve(assetId) : reject(new Error('no X-Asset-Id on the final response'))),
    });
    u.start();
  });
}

describe('resumable uploads and upload keys (CONTRACT §12)', () => {
  it('makes an asset from a resumable upload with the upload key: processed to OK, same checksum, custom data applied', async () => {
    const image = await sharp({ create: { width: 1600, height: 1200, channels: 3, background: '#808080', noise: { type: 'gaussian', mean: 128, sigma: 40 } } })
      .png()
      .toBuffer();
    expect(image.length).toBeGreaterThan(5 * 1024 * 1024); // more than one chunk
    const id = await tusUpload(image, 'noise.png', 'image/png', { headers: { 'X-Upload-Key': uploadkey } });
    const data = await settled(id, 120_000);
    expect(data).toMatchObject({ id, status: 'OK', name: 'noise.png', content_type: 'image/png', size: image.length, creator_id: 1, data: { via: 'tus' } });
    expect(data.checksum).toBe(createHash('md5').update(image).digest('hex'));
    expect(data.metadata).toMatchObject({ width: 1600, height: 1200 });
  });

  it('takes the key as the uploadkey query parameter (browser widgets), and answers 401 to it on {base}', async () => {
    const id = await tusUpload(Buffer.from('plain text through tus'), 'note.txt', 'text/plain', { query: `?uploadkey=${encodeURIComponent(uploadkey)}` });
    expect((await settled(id)).status).toBe('OK');
    const onBase = await call('GET', `/api/v1/assets/${id}/data`, undefined, { 'x-upload-key': uploadkey });
    expect(onBase.status).toBe(401);
    expect((await call('GET', `/api/v1/assets/${id}/data?uploadkey=${encodeURIComponent(uploadkey)}`, undefined, {})).status).toBe(401);
  });

  it('rotates the key through {base}: the old one answers 401 at once on {upload}, the new one works', async () => {
    const rotated = await call('POST', '/api/v1/users/me/uploadkey');
    expect(rotated.status).toBe(200);
    const fresh = rotated.body.uploadkey as string;
    expect(fresh).not.toBe(uploadkey);
    const form = () => {
      const f = new FormData();
      f.append('file', new Blob([Buffer.from('x')]), 'x.txt');
      return f;
    };
    const old = await fetch(`${e2e.suite.upload}/api/v1/assets/new/content/original/upload`, {
      method: 'POST',
      headers: { 'x-upload-key': uploadkey },
      body: form(),
    });
    expect(old.status).toBe(401);
    const now = await fetch(`${e2e.suite.upload}/api/v1/assets/new/content/original/upload`, {
      method: 'POST',
      headers: { 'x-upload-key': fresh },
      body: form(),
    });
    expect(now.status).toBe(200);
    await expect(tusUpload(Buffer.from('y'), 'y.txt', 'text/plain', { headers: { 'X-Upload-Key': uploadkey } })).rejects.toThrow(/401/);
    uploadkey = fresh;
  });
});
