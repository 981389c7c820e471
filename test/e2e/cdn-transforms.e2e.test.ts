/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are untyped JSON; the assertions check them */
import sharp from 'sharp';
import { waitFor } from '@dam/testing';
import { useSuite } from './suite';

/** CONTRACT §15 end to end: transforms signed into cdn links, served by the edge, made once by conversion. */

const e2e = useSuite();
const auth = () => ({ authorization: `Bearer ${e2e.jwt}` });

async function call(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${e2e.suite.base}${path}`, {
    method,
    headers: { ...auth(), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

async function upload(name: string, bytes: Buffer): Promise<string> {
  const form = new FormData();
  form.append('file', new Blob([bytes]), name);
  const res = await fetch(`${e2e.suite.upload}/api/v1/assets/new/content/original/upload`, { method: 'POST', headers: auth(), body: form });
  expect(res.status).toBe(200);
  return ((await res.json()) as { files: Array<{ id: string }> }).files[0]?.id as string;
}

const settled = (id: string) =>
  waitFor(async () => ((await call('GET', `/api/v1/assets/${id}/data`)).body?.status ?? 'NOT_READY') !== 'NOT_READY', {
    timeoutMs: 60_000,
    intervalMs: 200,
    description: `${id} processed`,
  });

const linkOf = async (id: string, query: string): Promise<string> => {
  const res = await call('GET', `/api/v1/assets/${id}/get_link${query}`);
  expect([query, res.status]).toEqual([query, 200]);
  return res.body.url as string;
};

const made = () => (e2e.suite.services.conversion?.logs() ?? []).filter((l) => l.includes('"transform made"')).length;
const decoded = async (res: Response) => sharp(Buffer.from(await res.arrayBuffer())).metadata();

describe('transforms in signed links (CONTRACT §15)', () => {
  let image: string;
  let text: string;

  beforeAll(async () => {
    const png = await sharp({ create: { width: 320, height: 240, channels: 3, background: { r: 200, g: 90, b: 30 } } })
      .png()
      .toBuffer();
    [image, text] = await Promise.all([upload('photo.png', png), upload('notes.txt', Buffer.from('not an image\n'.repeat(50)))]);
    await Promise.all([settled(image), settled(text)]);
  });

  it('puts the given parameters after accessId and before signature, in the order w, h, fit, format, q; without them the URL keeps its shape', async () => {
    const plain = new URL(await linkOf(image, '?delivery=display'));
    expect([...plain.searchParams.keys()]).toEqual(['key', 'expiry', 'delivery', 'accessId', 'signature']);
    expect(plain.pathname).toBe(`/api/v1/files/content/${image}`);

    const two = new URL(await linkOf(image, '?delivery=display&format=auto&w=400'));
    expect([...two.searchParams.keys()]).toEqual(['key', 'expiry', 'delivery', 'accessId', 'w', 'format', 'signature']);
    expect(two.search).toMatch(/^\?key=original&expiry=\d+&delivery=display&accessId=[^&]+&w=400&format=auto&signature=[A-Za-z0-9_-]{43}$/);
    const all = new URL(await linkOf(image, '?q=70&format=webp&fit=cover&h=50&w=60'));
    expect([...all.searchParams.entries()].slice(4, 9)).toEqual([
      ['w', '60'],
      ['h', '50'],
      ['fit', 'cover'],
      ['format', 'webp'],
      ['q', '70'],
    ]);
    // The POST form writes the same URL for the same parameters.
    const bulk = await call('POST', '/api/v1/assets/get_link', { ids: [image], w: 400, format: 'auto', delivery: 'display' });
    expect(bulk.status).toBe(200);
    expect(new URL(bulk.body.links[0].url).search).toMatch(/&accessId=[^&]+&w=400&format=auto&signature=/);
  });

  it('serves the transformed image, made once, then as any object (byte cache, Range)', async () => {
    const url = await linkOf(image, '?delivery=display&w=100&format=webp&q=60');
    const before = made();
    const first = await fetch(url);
    expect(first.status).toBe(200);
    expect(first.headers.get('content-type')).toBe('image/webp');
    expect(await decoded(first)).toMatchObject({ format: 'webp', width: 100, height: 75 });
    const again = await fetch(url);
    expect([again.status, again.headers.get('x-cache')]).toEqual([200, 'HIT']);
    await again.arrayBuffer();
    const part = await fetch(url, { headers: { range: 'bytes=0-3' } });
    expect(part.status).toBe(206);
    expect(Buffer.from(await part.arrayBuffer()).toString('latin1')).toBe('RIFF');
    expect(made()).toBe(before + 1);

    // fit=outside (a signed link's): the box is covered, the ratio kept.
    const outside = await fetch(await linkOf(image, '?delivery=display&w=100&h=100&fit=outside&format=png'));
    expect(await decoded(outside)).toMatchObject({ format: 'png', width: 133, height: 100 });
  });

  it('refuses any transform parameter changed, added or removed (403 SIGNATURE_INVALID)', async () => {
    const url = await linkOf(image, '?delivery=display&w=80&format=png');
    const edit = (f: (u: URL) => void) => {
      const u = new URL(url);
      f(u);
      return u.toString();
    };
    const tampered = [
      edit((u) => u.searchParams.set('w', '81')),
      // Added before the signature, where a link writes it.
      url.replace('&signature=', '&q=80&signature='),
      url.replace('&format=png', ''),
      url.replace('&w=80&format=png', ''),
    ];
    for (const t of tampered) {
      const res = await fetch(t);
      expect([t, res.status, ((await res.json()) as any).error?.code]).toEqual([t, 403, 'SIGNATURE_INVALID']);
    }
    expect((await fetch(edit((u) => u.searchParams.set('w', '080')))).status).toBe(403);
  });

  it('answers format=auto from Accept: AVIF when accepted, else the source format, with Vary: Accept', async () => {
    const url = await linkOf(image, '?delivery=display&w=64&format=auto');
    const avif = await fetch(url, { headers: { accept: 'image/avif,image/webp,*/*' } });
    expect([avif.status, avif.headers.get('content-type')]).toEqual([200, 'image/avif']);
    expect(avif.headers.get('vary')).toMatch(/\bAccept\b/i);
    expect(await decoded(avif)).toMatchObject({ format: 'heif', width: 64 });
    const webp = await fetch(url, { headers: { accept: 'image/webp,*/*' } });
    expect(webp.headers.get('content-type')).toBe('image/webp');
    await webp.arrayBuffer();
    const any = await fetch(url, { headers: { accept: '*/*' } });
    expect([any.status, any.headers.get('content-type')]).toEqual([200, 'image/png']);
    expect(any.headers.get('vary')).toMatch(/\bAccept\b/i);
    expect(await decoded(any)).toMatchObject({ format: 'png', width: 64, height: 48 });
  });

  it('answers 400 for an invalid value, a key that is not an image, and a transform on an object_storage link', async () => {
    for (const bad of ['w=0', 'w=9000', 'h=abc', 'fit=squash', 'format=gif', 'q=101']) {
      const res = await call('GET', `/api/v1/assets/${image}/get_link?${bad}`);
      expect([bad, res.status, res.body.error.code]).toEqual([bad, 400, 'VALIDATION_FAILED']);
      expect(res.body.error.details).toEqual(expect.arrayContaining([expect.objectContaining({ path: expect.stringContaining(bad.split('=')[0] as string) })]));
    }
    const notImage = await call('GET', `/api/v1/assets/${text}/get_link?w=100`);
    expect([notImage.status, notImage.body.error.code]).toEqual([400, 'TRANSFORM_NOT_APPLICABLE']);
    const storage = await call('GET', `/api/v1/assets/${image}/get_link?link_type=object_storage&w=100`);
    expect([storage.status, storage.body.error.code]).toEqual([400, 'VALIDATION_FAILED']);
    // In the POST form a key that is not an image is that asset's error; the others get their link.
    const bulk = await call('POST', '/api/v1/assets/get_link', { ids: [image, text], w: 50 });
    expect(bulk.status).toBe(200);
    expect(bulk.body.links).toEqual([
      { id: image, url: expect.stringMatching(/&w=50&signature=/), expires_at: expect.any(String) },
      { id: text, error: { code: 'TRANSFORM_NOT_APPLICABLE', message: expect.any(String) } },
    ]);
    // Without a transform both link as before.
    expect((await call('GET', `/api/v1/assets/${text}/get_link`)).status).toBe(200);
  });
});
