import http, { type Server } from 'node:http';
import { createServiceVerifier, parseTrustedKeys, permissionsFor, ROLE_NAMES, type Principal } from '@dam/auth-tokens';
import { createPool, type Pool } from '@dam/db';
import { createLogger } from '@dam/logging';
import { createDatabase, listen, serviceIdentities } from '@dam/testing';
import { buildSearchApp } from '../src/app';
import { migrateSearch } from '../src/migrations';

const identities = serviceIdentities();
let pool: Pool;
let server: Server;
let url: string;

const principal = (groupId: number, userId: number, roleId: number): Principal => ({
  user_id: userId,
  group_id: groupId,
  role_id: roleId,
  role_name: ROLE_NAMES[roleId] ?? 'USER',
  permissions: permissionsFor(roleId),
  via: 'jwt',
});

/** A call as the gateway sends it, for this user. */
async function call(p: Principal, method: string, path: string, body?: unknown) {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: {
      ...identities.headers('gateway', { audience: 'search', method, path, principal: p }),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read arbitrary JSON
  return { status: res.status, body: (await res.json()) as any };
}

beforeAll(async () => {
  pool = createPool(await createDatabase('search_routes'));
  await migrateSearch(pool);
  // 10,001 assets of group 1 and three of group 2, written straight into the model.
  await pool.query(
    `INSERT INTO search_index (asset_id, group_id, version, indexed, status, name, content_type, size, creator_id, upload_time, update_time, doc, tsv)
     SELECT 'g1-' || lpad(i::text, 6, '0'), 1, 1, true, 'OK', 'photo ' || i || '.jpg', 'image/jpeg', i, 1 + (i % 2),
            now() - make_interval(secs => i), now(), '{}'::jsonb, to_tsvector('simple', 'photo ' || i)
     FROM generate_series(1, 10001) AS i`,
  );
  await pool.query(
    `INSERT INTO search_index (asset_id, group_id, version, indexed, status, name, content_type, size, creator_id, upload_time, update_time, doc, tsv)
     SELECT 'g2-' || i, 2, 1, true, 'OK', 'photo other ' || i || '.jpg', 'image/jpeg', i, 9, now(), now(), '{}'::jsonb, to_tsvector('simple', 'photo other ' || i)
     FROM generate_series(1, 3) AS i`,
  );
  const app = buildSearchApp({
    logger: createLogger({ service: 'search-test', level: 'silent' }),
    verifier: createServiceVerifier({ service: 'search', trusted: parseTrustedKeys(identities.trustedKeys()) }),
    pool,
    resultSetTtlMs: 30 * 60_000,
  });
  server = http.createServer(app);
  url = await listen(server);
});

afterAll(async () => {
  await new Promise((r) => server.close(r));
  await pool.end();
});

describe('result sets', () => {
  it('caps a set at 10,000 and says so, pages through it to the last page, and refuses the page after', async () => {
    const admin = principal(1, 1, 1);
    const first = await call(admin, 'POST', '/api/v1/assets/search', { query: 'photo', page_size: 100, sort: [{ field: 'size', order: 'asc' }] });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ total: 10000, total_is_capped: true, pages: 100, page_size: 100 });
    expect(first.body.results[0]).toMatchObject({ id: 'g1-000001', size: 1 });
    const last = await call(admin, 'GET', `/api/v1/assets/search/${first.body.search_result_id}/100`);
    expect(last.status).toBe(200);
    expect(last.body.results).toHaveLength(100);
    expect(last.body.results[99]).toMatchObject({ id: 'g1-010000' });
    const beyond = await call(admin, 'GET', `/api/v1/assets/search/${first.body.search_result_id}/101`);
    expect(beyond.status).toBe(400);
    // Another user of the group cannot page someone else's set.
    expect((await call(principal(1, 2, 1), 'GET', `/api/v1/assets/search/${first.body.search_result_id}/1`)).status).toBe(404);
  });

  it('never shows another group\'s assets, and scopes a CREATOR to its own', async () => {
    const other = await call(principal(2, 9, 1), 'POST', '/api/v1/assets/search', { query: 'photo' });
    expect(other.body.total).toBe(3);
    expect(other.body.results.every((r: { id: string }) => r.id.startsWith('g2-'))).toBe(true);
    const creator = await call(principal(1, 2, 4), 'POST', '/api/v1/assets/search', { filters: { size: { max: 10 } }, facets: ['creator_id'] });
    expect(creator.body.total).toBe(5);
    expect(creator.body.facets.creator_id).toEqual([{ value: 2, count: 5 }]);
  });

  it('answers wrong types and unknown members with 400 and details', async () => {
    const bad = await call(principal(1, 1, 1), 'POST', '/api/v1/assets/search', { query: 5, filters: { size: { min: 'big' } }, colour: 'red' });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('VALIDATION_FAILED');
    expect(bad.body.error.details.length).toBeGreaterThanOrEqual(3);
  });
});
