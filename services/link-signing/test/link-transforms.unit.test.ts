import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import type { Principal } from '@dam/auth-tokens';
import { AppError } from '@dam/errors';
import type { DeliveryTarget, DeliveryTransform } from '@dam/internal-api';
import { single, bulk } from '../src/http/links.routes';
import { accessSecret, canonicalLink, cdnUrl, linkOf, signLink, verifyLink, type LinkParams } from '../src/domain/link-signature';
import type { SuiteClients } from '../src/domain/ports';
import { getLink, getLinks } from '../src/use-cases/get-link.use-case';
import { accepts, edgeFormat, serveDelivery, type ServeDeliveryDeps } from '../src/use-cases/serve-delivery.use-case';

/** CONTRACT §15: transforms signed into cdn links, over in-memory ports (no auth, metadata, S3 or HTTP). */

const ID = 'A'.repeat(32);
const ACC = 'f'.repeat(32);
const NOW = 1_900_000_000;
const KEY = Buffer.alloc(32, 7);
const base: LinkParams = { key: 'original', expiry: 1_900_000_060, delivery: 'display', accessId: ACC };

describe('the canonical string and the URL of a link with a transform', () => {
  const secret = accessSecret(randomBytes(32), ACC);

  it('signs exactly the old string without a transform (links handed out before keep verifying), and each parameter after it', () => {
    expect(canonicalLink(ID, base)).toBe(`v1\n${ID}\nkey=original\nexpiry=1900000060\ndelivery=display\naccessId=${ACC}`);
    expect(canonicalLink(ID, { ...base, transform: {} })).toBe(canonicalLink(ID, base));
    // Given in any order, signed in the link's: w, h, fit, format, q.
    expect(canonicalLink(ID, { ...base, transform: { q: 70, format: 'auto', fit: 'outside', h: 300, w: 400 } })).toBe(
      `${canonicalLink(ID, base)}\nw=400\nh=300\nfit=outside\nformat=auto\nq=70`,
    );
  });

  it('writes the given parameters after accessId and before signature, in the order w, h, fit, format, q; none: the specified shape', () => {
    const sig = 's'.repeat(43);
    const plain = `https://cdn.example/api/v1/files/content/${ID}?key=original&expiry=1900000060&delivery=display&accessId=${ACC}&signature=${sig}`;
    expect(cdnUrl('https://cdn.example', ID, base, sig)).toBe(plain);
    expect(cdnUrl('https://cdn.example', ID, { ...base, transform: {} }, sig)).toBe(plain);
    expect(cdnUrl('https://cdn.example', ID, { ...base, transform: { format: 'auto', w: 400 } }, sig)).toBe(
      `https://cdn.example/api/v1/files/content/${ID}?key=original&expiry=1900000060&delivery=display&accessId=${ACC}&w=400&format=auto&signature=${sig}`,
    );
    const all = new URL(cdnUrl('https://cdn.example', ID, { ...base, transform: { q: 1, format: 'png', fit: 'fill', h: 8192, w: 1 } }, sig));
    expect([...all.searchParams.keys()]).toEqual(['key', 'expiry', 'delivery', 'accessId', 'w', 'h', 'fit', 'format', 'q', 'signature']);
  });

  it('refuses a transform parameter changed, added or removed, and reads back what it wrote', () => {
    const signed: LinkParams = { ...base, transform: { w: 400, format: 'auto' } };
    const signature = signLink(secret, ID, signed);
    const query = Object.fromEntries(new URL(cdnUrl('https://cdn.example', ID, signed, signature)).searchParams);
    const read = linkOf(query);
    expect(read).toEqual({ params: signed, signature });
    expect(verifyLink([secret], ID, read.params, signature)).toBe(true);
    const tampered: Array<Record<string, string>> = [
      { ...query, w: '401' },
      { ...query, h: '300' },
      { ...query, format: 'webp' },
      { ...query, q: '80' },
      { ...query, fit: 'cover' },
    ];
    const { format: _f, ...noFormat } = query;
    const { w: _w, ...noWidth } = query;
    tampered.push(noFormat, noWidth);
    for (const q of tampered) expect([q, verifyLink([secret], ID, linkOf(q).params, signature)]).toEqual([q, false]);
    // A link signed without a transform does not verify with one added.
    const plainSig = signLink(secret, ID, base);
    const plain = Object.fromEntries(new URL(cdnUrl('https://cdn.example', ID, base, plainSig)).searchParams);
    expect(verifyLink([secret], ID, linkOf(plain).params, plainSig)).toBe(true);
    expect(verifyLink([secret], ID, linkOf({ ...plain, w: '10' }).params, plainSig)).toBe(false);
  });

  it('reads each transform parameter only in the one spelling a link writes (403 LINK_INVALID otherwise)', () => {
    const q = { key: 'original', expiry: '1900000060', delivery: 'display', accessId: ACC, signature: 's'.repeat(43) };
    const bad = [
      { w: '0400' },
      { w: '0' },
      { w: '8193' },
      { h: '1e3' },
      { h: '-5' },
      { q: '101' },
      { q: '' },
      { fit: 'squash' },
      { format: 'gif' },
      { w: ['1', '2'] },
    ];
    for (const b of bad) {
      const err = (() => {
        try {
          linkOf({ ...q, ...b });
          return 'read';
        } catch (e) {
          return e instanceof AppError ? `${e.kind} ${e.code}` : String(e);
        }
      })();
      expect([b, err]).toEqual([b, 'FORBIDDEN LINK_INVALID']);
    }
    expect(linkOf({ ...q, w: '8192', h: '1', fit: 'outside', format: 'avif', q: '100' }).params.transform).toEqual({
      w: 8192,
      h: 1,
      fit: 'outside',
      format: 'avif',
      q: 100,
    });
  });
});

describe('Get Link with a transform: what the route validates', () => {
  const query = (q: Record<string, string>) => single.query.safeParse(q);
  it('takes w, h (1-8192), fit, format (with auto), q (1-100) and refuses anything else', () => {
    expect(query({ w: '400', h: '8192', fit: 'outside', format: 'auto', q: '1' })).toMatchObject({
      success: true,
      data: { w: 400, h: 8192, fit: 'outside', format: 'auto', q: 1 },
    });
    const invalid: Array<Record<string, string>> = [
      { w: '0' },
      { w: '8193' },
      { h: 'abc' },
      { w: '1.5' },
      { fit: 'squash' },
      { format: 'gif' },
      { q: '0' },
      { q: '101' },
    ];
    for (const bad of invalid) {
      expect([bad, query(bad).success]).toEqual([bad, false]);
    }
    expect(bulk.body.safeParse({ ids: [ID], w: 400, format: 'webp' })).toMatchObject({ success: true, data: { w: 400, format: 'webp' } });
    expect(bulk.body.safeParse({ ids: [ID], w: 9000 }).success).toBe(false);
  });
});

const image: DeliveryTarget = {
  group_id: 1,
  asset_id: ID,
  object_key: `originals/1/${ID}`,
  content_type: 'image/png',
  file_name: 'a.png',
  size: 3,
  etag: 'e1',
};
const video: DeliveryTarget = { ...image, object_key: `originals/1/${ID}v`, content_type: 'video/mp4', file_name: 'a.mp4' };
const pdf: DeliveryTarget = { ...image, content_type: 'application/pdf', file_name: 'a.pdf' };
const storyboard: DeliveryTarget = {
  ...image,
  object_key: `conversions/1/${ID}/sum/storyboard/sprite.jpg`,
  content_type: 'image/jpeg',
  folder: `conversions/1/${ID}/sum/storyboard/`,
};
const variant: DeliveryTarget = {
  group_id: 1,
  asset_id: ID,
  object_key: `conversions/1/${ID}/sum/_t/${'0'.repeat(32)}.webp`,
  content_type: 'image/webp',
  file_name: 'a.webp',
  size: 2,
};

function world() {
  const targets = new Map<string, DeliveryTarget>([
    ['original', image],
    ['video', video],
    ['pdf', pdf],
    ['storyboard', storyboard],
  ]);
  const asked: Array<{ key: string; ids: readonly string[]; transform: DeliveryTransform | undefined }> = [];
  const clients: SuiteClients = {
    accessIdOf: async () => ACC,
    accessOwner: async (id) => (id === ACC ? { user_id: 5, group_id: 1, role_id: 2, active: true } : undefined),
    delivery: async (_p, ids, key, transform) => {
      asked.push({ key, ids, transform });
      const t = targets.get(key);
      if (!t) return ids.map((id) => ({ id, error: { status: 404, code: 'CONVERSION_NOT_FOUND', message: 'no' } }));
      return ids.map((id) => ({ id, target: transform ? { ...variant, asset_id: id } : { ...t, asset_id: id } }));
    },
  };
  const deps: ServeDeliveryDeps = {
    clients,
    storage: {
      getStream: async () => Readable.from([Buffer.from('xx')]),
      getRange: async () => Readable.from([Buffer.from('xx')]),
      stat: async (k) => (k === variant.object_key ? { size: 2, etag: 'variant-etag' } : null),
      presignPublicGet: async (k) => `https://s3.example/${k}`,
    },
    usage: { add: () => undefined },
    cdnBase: 'https://cdn.example',
    signingKeys: [KEY],
    now: () => NOW * 1000,
  };
  return { deps, asked };
}
const principal = { user_id: 5, group_id: 1, role_id: 2 } as Principal;
const cdn = { link_type: 'cdn', delivery: 'display', expiry: '60' } as const;
const failure = (p: Promise<unknown>) =>
  p.then(
    () => 'made',
    (e: unknown) => (e instanceof AppError ? `${e.kind} ${e.code}` : String(e)),
  );

describe('Get Link with a transform, then the edge', () => {
  it('signs the transform into the link; the edge asks metadata for the variant and serves it; a tampered link is 403', async () => {
    const w = world();
    const made = await getLink(w.deps, principal, ID, { ...cdn, key: 'original', transform: { w: 400, format: 'webp', q: 70 } });
    const url = new URL(made.url);
    expect(made.url).toMatch(
      new RegExp(`\\?key=original&expiry=${NOW + 60}&delivery=display&accessId=${ACC}&w=400&format=webp&q=70&signature=[A-Za-z0-9_-]{43}$`),
    );
    // Get Link only checks the key is an image: nothing is made until the link is used.
    expect(w.asked).toEqual([{ key: 'original', ids: [ID], transform: undefined }]);
    const query = Object.fromEntries(url.searchParams);
    const served = await serveDelivery(w.deps, { assetId: ID, segments: [], query });
    expect(served).toMatchObject({ kind: 'object', file: { objectKey: variant.object_key, contentType: 'image/webp', size: 2, etag: 'variant-etag' } });
    expect(served.kind === 'object' && served.file.varyAccept).toBeFalsy();
    expect(w.asked[1]).toEqual({ key: 'original', ids: [ID], transform: { w: 400, format: 'webp', q: 70 } });
    const { q: _q, ...removed } = query;
    for (const q of [{ ...query, w: '401' }, { ...query, h: '10' }, removed]) {
      expect(await failure(serveDelivery(w.deps, { assetId: ID, segments: [], query: q }))).toBe('FORBIDDEN SIGNATURE_INVALID');
    }
    expect(w.asked).toHaveLength(2);
    // Without a transform the link is exactly today's.
    const plain = await getLink(w.deps, principal, ID, { ...cdn, key: 'original', transform: {} });
    expect([...new URL(plain.url).searchParams.keys()]).toEqual(['key', 'expiry', 'delivery', 'accessId', 'signature']);
  });

  it('answers format=auto from Accept (AVIF, else WebP, else the source format: no format asked) with Vary: Accept', async () => {
    const w = world();
    const made = await getLink(w.deps, principal, ID, { ...cdn, key: 'original', transform: { w: 40, format: 'auto' } });
    const query = Object.fromEntries(new URL(made.url).searchParams);
    const cases: Array<[string | undefined, DeliveryTransform]> = [
      ['image/avif,image/webp,*/*', { w: 40, format: 'avif' }],
      ['image/webp,*/*;q=0.8', { w: 40, format: 'webp' }],
      ['image/avif;q=0, image/webp', { w: 40, format: 'webp' }],
      ['*/*', { w: 40 }],
      ['image/*', { w: 40 }],
      [undefined, { w: 40 }],
    ];
    for (const [accept, transform] of cases) {
      const served = await serveDelivery(w.deps, { assetId: ID, segments: [], query, ...(accept ? { accept } : {}) });
      expect([accept, served.kind === 'object' && served.file.varyAccept, w.asked.at(-1)?.transform]).toEqual([accept, true, transform]);
    }
    expect(edgeFormat('png', 'image/avif')).toBe('png');
    expect(accepts('text/html, IMAGE/AVIF;q=0.5', 'image/avif')).toBe(true);
  });

  it('refuses a transform of a non-image key (400 TRANSFORM_NOT_APPLICABLE, per asset in bulk) and on an object_storage link (400 VALIDATION_FAILED)', async () => {
    const w = world();
    const transform = { w: 100 };
    for (const key of ['video', 'pdf', 'storyboard']) {
      expect([key, await failure(getLink(w.deps, principal, ID, { ...cdn, key, transform }))]).toEqual([key, 'BAD_REQUEST TRANSFORM_NOT_APPLICABLE']);
    }
    const links = await getLinks(w.deps, principal, [ID, 'B'.repeat(32)], { ...cdn, key: 'video', transform });
    expect(links).toEqual([
      { id: ID, error: { code: 'TRANSFORM_NOT_APPLICABLE', message: expect.any(String) } },
      { id: 'B'.repeat(32), error: { code: 'TRANSFORM_NOT_APPLICABLE', message: expect.any(String) } },
    ]);
    const ok = await getLinks(w.deps, principal, [ID], { ...cdn, key: 'original', transform: { fit: 'outside', w: 5, h: 5 } });
    expect(ok[0] && 'url' in ok[0] ? ok[0].url : '').toMatch(/&accessId=f{32}&w=5&h=5&fit=outside&signature=/);
    const storage = { ...cdn, link_type: 'object_storage' as const, key: 'original', transform: { format: 'png' as const } };
    expect(await failure(getLink(w.deps, principal, ID, storage))).toBe('VALIDATION VALIDATION_FAILED');
    expect(await failure(getLinks(w.deps, principal, [ID], storage))).toBe('VALIDATION VALIDATION_FAILED');
    // An object_storage link without a transform is made as before.
    expect(await failure(getLink(w.deps, principal, ID, { ...storage, transform: {} }))).toBe('made');
  });
});
