import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import express from 'express';
import { createServiceVerifier, parseTrustedKeys, principalOf, type Principal } from '@dam/auth-tokens';
import { httpAssetDirectory } from '../src/adapters/metadata-assets.client';
import type { AssetDirectory } from '../src/domain/ports';
import { call, identities, principalHeaders, startAuth, type TestAuth } from './harness';

const MINE = 'M'.repeat(32);
const THEIRS = 'T'.repeat(32);

/**
 * The watermark check through the real metadata client: a stand-in metadata that checks auth's service token
 * as metadata does (caller `auth`, a principal required) and answers from a table per group.
 */
describe('PATCH /api/v1/settings: watermark_asset_id, asked of metadata', () => {
  let auth: TestAuth;
  let metadata: { server: Server; url: string };
  let directory: AssetDirectory;
  const seen: Principal[] = [];
  const assetsOf: Record<number, string[]> = { 1: [MINE], 2: [THEIRS] };

  beforeAll(async () => {
    const verifier = createServiceVerifier({ service: 'metadata', trusted: parseTrustedKeys(identities.trustedKeys()) });
    const app = express();
    app.use(express.json());
    app.all('/internal/v1/assets/exists', verifier.guard({ callers: ['upload', 'auth'], principal: 'required' }));
    app.post('/internal/v1/assets/exists', (req, res) => {
      const p = principalOf(res);
      seen.push(p);
      res.json({ existing: (req.body as { ids: string[] }).ids.filter((id) => assetsOf[p.group_id]?.includes(id)) });
    });
    app.use(((err, _req, res, _next) => {
      res.status((err as { kind?: string }).kind === 'FORBIDDEN' ? 403 : 401).json({ error: { code: 'REFUSED', message: 'refused' } });
    }) as express.ErrorRequestHandler);
    metadata = await new Promise((resolve) => {
      const server = app.listen(0, '127.0.0.1', () => resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }));
    });
    directory = httpAssetDirectory({ baseUrl: metadata.url, signer: identities.signer('auth'), timeoutMs: 2000 });
    // Swappable, so one test can point auth at a metadata that is down or that refuses it.
    auth = await startAuth({}, { assets: { existing: (p, ids) => directory.existing(p, ids) } });
  });
  afterAll(async () => {
    await auth.close();
    await new Promise((r) => metadata.server.close(r));
  });

  const patch = (body: unknown) => call(`${auth.url}/api/v1/settings`, 'PATCH', body, principalHeaders(1, 1, 1));

  it("accepts an asset of the caller's group and refuses another group's, naming the field", async () => {
    const own = await patch({ conversions: { watermark_asset_id: MINE } });
    expect(own.status).toBe(200);
    expect(own.body.conversions.watermark_asset_id).toBe(MINE);
    // metadata was asked as auth, for the user changing the settings.
    expect(seen.at(-1)).toMatchObject({ user_id: 1, group_id: 1 });

    const foreign = await patch({ conversions: { watermark_asset_id: THEIRS } });
    expect(foreign.status).toBe(400);
    expect(foreign.body).toEqual({
      error: {
        code: 'VALIDATION_FAILED',
        message: expect.any(String),
        details: [{ path: 'conversions.watermark_asset_id', message: expect.any(String) }],
      },
    });
    // Nothing changed; clearing the watermark needs no asset.
    const cleared = await patch({ conversions: { watermark_asset_id: null } });
    expect(cleared.status).toBe(200);
    expect(cleared.body.conversions.watermark_asset_id).toBeNull();
  });

  it('metadata unreachable, or refusing auth, → 503 with the contract body, and nothing changes', async () => {
    const before = (await call(`${auth.url}/api/v1/settings`, 'GET', undefined, principalHeaders(1, 1, 1))).body;
    const reachable = directory;
    try {
      const dead = await new Promise<string>((resolve) => {
        const s = express().listen(0, '127.0.0.1', () => {
          const url = `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
          s.close(() => resolve(url));
        });
      });
      directory = httpAssetDirectory({ baseUrl: dead, signer: identities.signer('auth'), timeoutMs: 2000 });
      const down = await patch({ conversions: { watermark_asset_id: MINE }, bulk_delete: { max_assets: 7 } });
      expect(down.status).toBe(503);
      expect(down.body).toEqual({ error: { code: 'METADATA_UNAVAILABLE', message: expect.any(String) } });
      // Signed as a service metadata does not list for this route: refused there, unavailable here.
      directory = httpAssetDirectory({ baseUrl: metadata.url, signer: identities.signer('conversion'), timeoutMs: 2000 });
      const refused = await patch({ conversions: { watermark_asset_id: MINE } });
      expect(refused.status).toBe(503);
      expect(refused.body.error.code).toBe('METADATA_UNAVAILABLE');
    } finally {
      directory = reachable;
    }
    expect((await call(`${auth.url}/api/v1/settings`, 'GET', undefined, principalHeaders(1, 1, 1))).body).toEqual(before);
  });

  it('refuses webhook URLs that fail the outbound guard (CONTRACT §11), each named by its index', async () => {
    const res = await patch({
      webhooks: {
        urls: [
          'https://hooks.example.com/ok',
          'https://[::1]/x',
          'https://[::ffff:10.0.0.1]/x',
          'https://192.168.1.10/x',
          'https://0.0.0.0/x',
          'https://224.0.0.1/x',
          'https://metadata.google.internal/computeMetadata',
          'https://user:pw@hooks.example.com/x',
          'http://hooks.example.com/plain',
        ],
      },
    });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('VALIDATION_FAILED');
    expect(res.body.error.details.map((d: { path: string }) => d.path)).toEqual([1, 2, 3, 4, 5, 6, 7, 8].map((i) => `webhooks.urls.${i}`));
    // A scheme other than http(s) is refused by the body's schema.
    const ftp = await patch({ webhooks: { urls: ['ftp://hooks.example.com/x'] } });
    expect(ftp.status).toBe(400);
    expect(ftp.body.error.details[0].path).toMatch(/^webhooks\.urls/);
  });
});

describe('PATCH /api/v1/settings: notices to the services that keep settings', () => {
  it('announces each committed change of a group before answering, and nothing for a refused one', async () => {
    const announced: number[] = [];
    let answered = false;
    let announcedBeforeAnswer = false;
    let failNext = false;
    const auth = await startAuth(
      {},
      {
        announceSettingsChange: async (groupId) => {
          announcedBeforeAnswer = !answered;
          announced.push(groupId);
          if (failNext) throw new Error('NATS cannot be reached');
        },
      },
    );
    try {
      const patch = async (group: number, body: unknown) => {
        answered = false;
        const res = await call(`${auth.url}/api/v1/settings`, 'PATCH', body, principalHeaders(group, 1, 1));
        answered = true;
        return res;
      };
      expect((await patch(1, { conversions: { profile: { image: ['thumb'] } } })).status).toBe(200);
      expect(announced).toEqual([1]);
      expect(announcedBeforeAnswer).toBe(true);
      expect((await patch(1, { webhooks: { urls: ['https://[::1]/x'] } })).status).toBe(400);
      expect(announced).toEqual([1]);
      // A notice that cannot go out does not undo the committed change (readers' max age bounds it).
      failNext = true;
      const res = await patch(1, { conversions: { profile: { image: [] } } });
      expect(res.status).toBe(200);
      expect(res.body.conversions.profile.image).toEqual([]);
      expect(announced).toEqual([1, 1]);
    } finally {
      await auth.close();
    }
  });
});
