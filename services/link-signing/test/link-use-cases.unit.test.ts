import { Readable } from 'node:stream';
import type { Principal } from '@dam/auth-tokens';
import { AppError } from '@dam/errors';
import type { AccessOwner, DeliveryTarget } from '@dam/internal-api';
import { accessSecret, signLink, type LinkParams } from '../src/domain/link-signature';
import type { ObjectReader, SuiteClients } from '../src/domain/ports';
import { getLink, getLinks } from '../src/use-cases/get-link.use-case';
import { serveDelivery, type ServeDeliveryDeps } from '../src/use-cases/serve-delivery.use-case';

/** The link service's rules over in-memory ports: no auth, metadata, S3 or HTTP. */

const KEY = Buffer.alloc(32, 7);
const OLD_KEY = Buffer.alloc(32, 3);
const ASSET = 'A'.repeat(32);
const NOW = 1_900_000_000;
const original: DeliveryTarget = {
  group_id: 1,
  asset_id: ASSET,
  object_key: `1/${ASSET}/original`,
  content_type: 'image/png',
  file_name: 'a.png',
  size: 3,
  etag: 'e1',
};
const hls: DeliveryTarget = {
  group_id: 1,
  asset_id: ASSET,
  object_key: `1/${ASSET}/hls/index.m3u8`,
  content_type: 'application/vnd.apple.mpegurl',
  file_name: 'index.m3u8',
  folder: `1/${ASSET}/hls/`,
};
const principal = { user_id: 5, group_id: 1, role_id: 2 } as Principal;

function world() {
  const owners = new Map<string, AccessOwner>([['acc', { user_id: 5, group_id: 1, role_id: 2, active: true }]]);
  /** What metadata answers per key: a target, or an error (a trashed asset is 404 ASSET_NOT_FOUND). */
  const targets = new Map<string, DeliveryTarget | { status: number; code: string; message: string }>([
    ['original', original],
    ['hls', hls],
  ]);
  const objects = new Map<string, string>([
    [hls.object_key, '#EXTM3U\nseg0.ts\n'],
    [`1/${ASSET}/hls/seg0.ts`, 'ts'],
  ]);
  const asked: Principal[] = [];
  const used: Array<[number, number, number]> = [];
  const clients: SuiteClients = {
    accessIdOf: async () => 'acc',
    accessOwner: async (id) => owners.get(id),
    delivery: async (p, ids, key) => {
      asked.push(p);
      const t = targets.get(key);
      if (!t) return [{ id: ids[0] as string, error: { status: 404, code: 'CONVERSION_NOT_FOUND', message: 'no' } }];
      return ids.map((id) => ('status' in t ? { id, error: t } : { id, target: { ...t, asset_id: id } }));
    },
  };
  const storage: ObjectReader = {
    getStream: async (k) => Readable.from([Buffer.from(objects.get(k) ?? '')]),
    getRange: async (k) => Readable.from([Buffer.from(objects.get(k) ?? '')]),
    stat: async (k) => (objects.has(k) ? { size: (objects.get(k) as string).length, etag: `etag-${k}` } : null),
    presignPublicGet: async (k, seconds) => `https://s3.example/${k}?X-Amz-Expires=${seconds}`,
  };
  const deps: ServeDeliveryDeps = {
    clients,
    storage,
    usage: { add: (g, u, n) => void used.push([g, u, n]) },
    cdnBase: 'https://cdn.example',
    signingKeys: [KEY, OLD_KEY],
    now: () => NOW * 1000,
  };
  return { deps, owners, targets, asked, used };
}

const link = (over: Partial<LinkParams> = {}, key = KEY, asset = ASSET) => {
  const params: LinkParams = { key: 'original', expiry: NOW + 60, delivery: 'download', accessId: 'acc', ...over };
  return {
    key: params.key,
    expiry: String(params.expiry),
    delivery: params.delivery,
    accessId: params.accessId,
    signature: signLink(accessSecret(key, params.accessId), asset, params),
  };
};
const code = async (p: Promise<unknown>) =>
  p.then(
    () => 'served',
    (err: unknown) => (err instanceof AppError ? err.code : String(err)),
  );

describe('serve delivery (the edge)', () => {
  it('serves a valid link as its owner would read, signed by any active key', async () => {
    const w = world();
    const served = await serveDelivery(w.deps, { assetId: ASSET, segments: [], query: link() });
    expect(served).toMatchObject({ kind: 'object', file: { objectKey: original.object_key, size: 3, etag: 'e1', delivery: 'download' } });
    expect(w.asked[0]).toMatchObject({ user_id: 5, group_id: 1, role_id: 2 });
    served.count(10);
    expect(w.used).toEqual([[1, 5, 10]]);
    expect(await code(serveDelivery(w.deps, { assetId: ASSET, segments: [], query: link({}, OLD_KEY) }))).toBe('served');
  });

  it('refuses a wrong signature, another asset, a changed parameter, an unknown key', async () => {
    const w = world();
    const q = link();
    expect(await code(serveDelivery(w.deps, { assetId: ASSET, segments: [], query: { ...q, signature: 'x'.repeat(43) } }))).toBe('SIGNATURE_INVALID');
    expect(await code(serveDelivery(w.deps, { assetId: 'B'.repeat(32), segments: [], query: q }))).toBe('SIGNATURE_INVALID');
    expect(await code(serveDelivery(w.deps, { assetId: ASSET, segments: [], query: { ...q, delivery: 'display' } }))).toBe('SIGNATURE_INVALID');
    expect(await code(serveDelivery(w.deps, { assetId: ASSET, segments: [], query: link({}, Buffer.alloc(32, 9)) }))).toBe('SIGNATURE_INVALID');
    expect(await code(serveDelivery(w.deps, { assetId: ASSET, segments: [], query: { ...q, extra: '1' } }))).toBe('LINK_INVALID');
    expect(w.asked).toHaveLength(0);
  });

  it('refuses an expired link (the second after its expiry), before asking anybody', async () => {
    const w = world();
    expect(await code(serveDelivery(w.deps, { assetId: ASSET, segments: [], query: link({ expiry: NOW }) }))).toBe('served');
    expect(await code(serveDelivery(w.deps, { assetId: ASSET, segments: [], query: link({ expiry: NOW - 1 }) }))).toBe('LINK_EXPIRED');
    expect(w.asked).toHaveLength(1);
  });

  it('stops the links of a disabled user or a rotated accessID', async () => {
    const w = world();
    w.owners.set('acc', { user_id: 5, group_id: 1, role_id: 2, active: false });
    expect(await code(serveDelivery(w.deps, { assetId: ASSET, segments: [], query: link() }))).toBe('ACCESS_REVOKED');
    w.owners.delete('acc');
    expect(await code(serveDelivery(w.deps, { assetId: ASSET, segments: [], query: link() }))).toBe('ACCESS_REVOKED');
    expect(w.asked).toHaveLength(0);
  });

  it('answers 404 for an asset in the trash (metadata refuses its delivery) and a missing stored file', async () => {
    const w = world();
    w.targets.set('original', { status: 404, code: 'ASSET_NOT_FOUND', message: 'The asset is in the trash' });
    const refused = await serveDelivery(w.deps, { assetId: ASSET, segments: [], query: link() }).catch((e: AppError) => e);
    expect(refused).toMatchObject({ code: 'ASSET_NOT_FOUND', kind: 'NOT_FOUND' });
    expect(await code(serveDelivery(w.deps, { assetId: ASSET, segments: ['nothing.ts'], query: link({ key: 'hls' }) }))).toBe('CONTENT_NOT_FOUND');
    expect(await code(serveDelivery(world().deps, { assetId: ASSET, segments: ['seg0.ts'], query: link({ key: 'original' }) }))).toBe('CONTENT_NOT_FOUND');
  });

  it('signs every entry of a playlist with the link it came by', async () => {
    const w = world();
    const served = await serveDelivery(w.deps, { assetId: ASSET, segments: [], query: link({ key: 'hls' }) });
    if (served.kind !== 'playlist') throw new Error('a playlist was expected');
    expect(served.body.toString()).toMatch(
      /^#EXTM3U\nhttps:\/\/cdn\.example\/api\/v1\/files\/content\/A{32}\/seg0\.ts\?key=hls&expiry=\d+&delivery=download&accessId=acc&signature=/,
    );
  });
});

describe('get link', () => {
  it('signs a cdn link the edge then serves, and refuses an object_storage link to a playlist per asset', async () => {
    const w = world();
    const made = await getLink(w.deps, principal, ASSET, { key: 'original', link_type: 'cdn', delivery: 'download', expiry: '60' });
    const url = new URL(made.url);
    expect(made.expires_at).toBe(new Date((NOW + 60) * 1000).toISOString());
    const query = Object.fromEntries(url.searchParams);
    expect(await code(serveDelivery(w.deps, { assetId: ASSET, segments: [], query }))).toBe('served');
    const links = await getLinks(w.deps, principal, [ASSET, 'C'.repeat(32)], { key: 'hls', link_type: 'object_storage', delivery: 'download', expiry: '60' });
    expect(links.map((l) => ('error' in l ? l.error.code : 'url'))).toEqual(['LINK_TYPE_NOT_APPLICABLE', 'LINK_TYPE_NOT_APPLICABLE']);
    expect(await code(getLink(w.deps, principal, ASSET, { key: 'original', link_type: 'object_storage', delivery: 'download', expiry: String(604_801) }))).toBe(
      'VALIDATION_FAILED',
    );
  });
});
