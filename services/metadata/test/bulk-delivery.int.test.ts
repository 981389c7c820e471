import { createHash } from 'node:crypto';
import type { Server } from 'node:http';
import type { Principal } from '@dam/auth-tokens';
import type { Pool } from '@dam/db';
import { createHttpApp, finishApp } from '@dam/http';
import { deliveryResponse, INTERNAL_PATHS, type DeliveryResponse } from '@dam/internal-api';
import { createLogger } from '@dam/logging';
import { originalKey } from '@dam/storage';
import { listen } from '@dam/testing';
import { AssetRepository } from '../src/adapters/asset.repository';
import { internalDeliveryRoutes } from '../src/http/internal-delivery.routes';
import { assetId, principal, signedFetch, startMetadata, type Harness } from './harness';

// Issue 35: bulk get_link (up to 100 ids) had metadata look the assets up one after another; under load the call
// outlasted link-signing's 5 s timeout and get_link answered 503. The assets are now read by one statement.
let h: Harness;
let server: Server;
let url: string;
const sent: string[] = [];
let caller: Principal;

const GROUP = 1;
const checksum = createHash('md5').update('png').digest('hex');

async function create(creator: Principal, count: number): Promise<string[]> {
  const ids = Array.from({ length: count }, () => assetId());
  const res = await signedFetch(`${h.url}/internal/v1/assets`, creator, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      files: ids.map((id) => ({
        id,
        name: `${id}.png`,
        size: 3,
        checksum,
        content_type: 'image/png',
        object_key: originalKey(String(creator.group_id), id),
        metadata: {},
      })),
    }),
  });
  expect(res.status).toBe(201);
  return ids;
}

beforeAll(async () => {
  h = await startMetadata();
  // The route over a pool that counts the statements it is sent, acting for `caller`.
  const counting = {
    query: (text: string, values?: unknown[]) => {
      sent.push(text);
      return h.pool.query(text, values);
    },
  } as unknown as Pool;
  const logger = createLogger({ service: 'metadata-test', level: process.env.LOG_LEVEL ?? 'error' });
  const app = createHttpApp({ logger });
  app.use((_req, res, next) => {
    res.locals.principal = caller;
    next();
  });
  app.use(internalDeliveryRoutes(new AssetRepository(counting), { storage: h.storage }));
  server = (await import('node:http')).createServer(finishApp(app, logger));
  url = await listen(server);
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await h.stop();
});

async function delivery(ids: string[], key: string): Promise<DeliveryResponse['items']> {
  const res = await fetch(`${url}${INTERNAL_PATHS.delivery}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ ids, key }),
  });
  expect(res.status).toBe(200);
  return deliveryResponse.parse(await res.json()).items;
}

describe('bulk delivery lookups (issue 35)', () => {
  it('answers 100 ids by one statement, each as a call for that id alone answers it (order, 404s, permissions)', async () => {
    const mine = await create(principal({ group_id: GROUP, user_id: 7 }), 40);
    const theirs = await create(principal({ group_id: GROUP, user_id: 8 }), 50);
    const otherGroup = await create(principal({ group_id: 2, user_id: 7 }), 5);
    const withThumb = [...mine.slice(0, 20), ...theirs.slice(0, 20)];
    await h.pool.query(
      `UPDATE assets SET conversions = jsonb_build_object('thumb', jsonb_build_object('object_key', 'conversions/1/' || id || '/${checksum}/thumb.webp',
         'content_type', 'image/webp', 'width', 4, 'height', 3, 'size', 10, 'public', false)) WHERE id = ANY($1)`,
      [withThumb],
    );
    await h.pool.query(`UPDATE assets SET deleted_at = now() WHERE id = ANY($1)`, [[mine[39], theirs[49]]]);
    // Mixed: live, trashed, another group's, unknown, an id twice; shuffled so the answer's order is the request's.
    const ids = [...mine, ...theirs, ...otherGroup, 'no-such-asset-1', 'no-such-asset-2', 'no-such-asset-3', mine[0] as string, theirs[0] as string];
    for (let i = ids.length - 1; i > 0; i--) {
      const j = (i * 7919) % (i + 1);
      [ids[i], ids[j]] = [ids[j] as string, ids[i] as string];
    }
    expect(ids).toHaveLength(100);

    for (const who of [principal({ group_id: GROUP, user_id: 7 }), principal({ group_id: GROUP, user_id: 7, role: 'CREATOR' })]) {
      caller = who;
      for (const key of ['original', 'thumb']) {
        sent.length = 0;
        const bulk = await delivery(ids, key);
        // One statement for the 100 ids (100 before, one after another).
        expect({ role: who.role_name, key, statements: sent.length }).toEqual({ role: who.role_name, key, statements: 1 });
        const alone: DeliveryResponse['items'] = [];
        for (const id of ids) alone.push(...(await delivery([id], key)));
        expect(bulk).toEqual(alone);
        expect(bulk.map((item) => item.id)).toEqual(ids);
        // The request's answers are not all alike: some found, some 404.
        expect(bulk.filter((item) => 'target' in item).length).toBeGreaterThan(0);
        expect(bulk.filter((item) => 'error' in item && item.error.status === 404).length).toBeGreaterThanOrEqual(8);
      }
    }
  });
});
