import http, { type Server } from 'node:http';
import { createServiceVerifier, parseTrustedKeys, permissionsFor, ROLE_NAMES, type Principal } from '@dam/auth-tokens';
import { createPool, type Pool } from '@dam/db';
import { createLogger } from '@dam/logging';
import { createDatabase, listen, serviceIdentities } from '@dam/testing';
import { SearchIndexRepository } from '../src/adapters/search-index.repository';
import { ResultSetRepository } from '../src/adapters/result-set.repository';
import { PgSearchIndex } from '../src/adapters/search.repository';
import { buildSearchApp } from '../src/app';
import { applyCollectionMessage } from '../src/use-cases/apply-read-model.use-case';
import { migrateSearch } from '../src/migrations';
import { RESULT_CAP, searchRequest } from '../src/domain/search-request';
import { searchAssets, searchPage } from '../src/use-cases/search-assets.use-case';

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
  const text = body === undefined ? undefined : JSON.stringify(body);
  const res = await fetch(`${url}${path}`, {
    method,
    headers: {
      ...identities.headers('gateway', { audience: 'search', method, path, principal: p, ...(text === undefined ? {} : { body: text }) }),
      ...(text === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(text === undefined ? {} : { body: text }),
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
    index: new PgSearchIndex(pool),
    resultSets: new ResultSetRepository(pool),
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

  it('reads only the page asked of a stored set from the database (issue 33: all of its ids before, for every page)', async () => {
    const admin = principal(1, 1, 1);
    const first = await call(admin, 'POST', '/api/v1/assets/search', { query: 'photo', page_size: 100, sort: [{ field: 'size', order: 'asc' }] });
    const received: unknown[][] = [];
    const watched = {
      query: async (text: string, values?: unknown[]) => {
        const res = await pool.query(text, values);
        for (const row of res.rows as Array<Record<string, unknown>>) for (const v of Object.values(row)) if (Array.isArray(v)) received.push(v);
        return res;
      },
    } as unknown as Pool;
    const deps = { index: new PgSearchIndex(pool), resultSets: new ResultSetRepository(watched), resultSetTtlMs: 60_000 };
    const who = { groupId: 1, userId: 1, ownOnly: false, maySearchTrash: true };
    const page = await searchPage(deps, who, first.body.search_result_id, 40);
    expect(page).toMatchObject({ page: 40, pages: 100, total: 10000, total_is_capped: true, page_size: 100 });
    expect(page.results.map((r) => ('id' in r ? r.id : undefined))).toEqual(Array.from({ length: 100 }, (_, i) => `g1-${String(3901 + i).padStart(6, '0')}`));
    expect(Math.max(...received.map((v) => v.length))).toBe(100);
    await expect(searchPage(deps, who, first.body.search_result_id, 101)).rejects.toMatchObject({ code: 'PAGE_OUT_OF_RANGE' });
  });

  it("answers a result id of no set's form with 404, on both paths (CONTRACT §16: 400 before)", async () => {
    const admin = principal(1, 1, 1);
    for (const id of ['not-a-result', 'ABCDEF0123456789ABCDEF0123456789', 'a'.repeat(33), '0'.repeat(31)]) {
      for (const path of [`/api/v1/assets/search/${id}/1`, `/api/v1/search/${id}/1`, `/api/v1/assets/search/${id}/0`]) {
        const res = await call(admin, 'GET', path);
        expect({ path, status: res.status, code: res.body.error.code }).toEqual({ path, status: 404, code: 'SEARCH_RESULT_NOT_FOUND' });
      }
    }
    // A well-formed id that names no set is the same 404.
    expect((await call(admin, 'GET', `/api/v1/assets/search/${'0'.repeat(32)}/1`)).body.error.code).toBe('SEARCH_RESULT_NOT_FOUND');
  });

  it("never shows another group's assets, and scopes a CREATOR to its own", async () => {
    const other = await call(principal(2, 9, 1), 'POST', '/api/v1/assets/search', { query: 'photo' });
    expect(other.body.total).toBe(3);
    expect(other.body.results.every((r: { id: string }) => r.id.startsWith('g2-'))).toBe(true);
    const creator = await call(principal(1, 2, 4), 'POST', '/api/v1/assets/search', { filters: { size: { max: 10 } }, facets: ['creator_id'] });
    expect(creator.body.total).toBe(5);
    expect(creator.body.facets.creator_id).toEqual([{ value: 2, count: 5 }]);
  });

  it('filters and counts ARCHIVED, the status the specification lists but no endpoint sets (reserved, issue 32)', async () => {
    await pool.query(
      `INSERT INTO search_index (asset_id, group_id, version, indexed, status, name, content_type, size, creator_id, upload_time, update_time, doc, tsv)
       VALUES ('g3-archived', 3, 1, true, 'ARCHIVED', 'old.jpg', 'image/jpeg', 1, 1, now(), now(), '{}'::jsonb, to_tsvector('simple', 'old')),
              ('g3-ok', 3, 1, true, 'OK', 'new.jpg', 'image/jpeg', 1, 1, now(), now(), '{}'::jsonb, to_tsvector('simple', 'new'))`,
    );
    const admin = principal(3, 1, 1);
    const archived = await call(admin, 'POST', '/api/v1/assets/search', { filters: { status: ['ARCHIVED'] }, facets: ['status'] });
    expect(archived.status).toBe(200);
    expect(archived.body.results.map((r: { id: string; status: string }) => [r.id, r.status])).toEqual([['g3-archived', 'ARCHIVED']]);
    expect(archived.body.facets.status).toEqual([{ value: 'ARCHIVED', count: 1 }]);
    const all = await call(admin, 'POST', '/api/v1/assets/search', { filters: { status: ['OK', 'NOT_READY', 'ERROR', 'ARCHIVED'] } });
    expect(all.body.total).toBe(2);
    expect((await call(admin, 'POST', '/api/v1/assets/search', { filters: { status: ['OK'] } })).body.total).toBe(1);
  });

  it('takes letters that fold into tsquery syntax (security review F12: 500 before), and still folds accents', async () => {
    const admin = principal(1, 1, 1);
    for (const query of ['ʼ', 'ː', 'ŉ', '⑴', 'aʼb', "photo'", 'a\\b', 'ʼ ː ŉ']) {
      const res = await call(admin, 'POST', '/api/v1/assets/search', { query, page_size: 1 });
      expect({ query, status: res.status }).toEqual({ query, status: 200 });
    }
    expect((await call(admin, 'POST', '/api/v1/assets/search', { query: 'PHÓTO 10001' })).body.results.map((r: { id: string }) => r.id)).toEqual(['g1-010001']);
    // ⑴ folds to (1): the word 1, so it finds what 1 finds.
    const one = await call(admin, 'POST', '/api/v1/assets/search', { query: '⑴ photo', page_size: 1 });
    expect(one.body.total).toBe((await call(admin, 'POST', '/api/v1/assets/search', { query: '1 photo', page_size: 1 })).body.total);
  });

  it("shows an extended page's docs from search_docs, and a row's own doc where a replica of the previous release wrote one (issue 33)", async () => {
    await pool.query(
      `INSERT INTO search_index (asset_id, group_id, version, indexed, status, name, content_type, size, creator_id, upload_time, update_time, doc, tsv)
       VALUES ('g4-new', 4, 1, true, 'OK', 'a.jpg', 'image/jpeg', 2, 1, now(), now(), NULL, to_tsvector('simple', 'doc')),
              ('g4-old', 4, 1, true, 'OK', 'b.jpg', 'image/jpeg', 1, 1, now(), now(), '{"from": "row"}'::jsonb, to_tsvector('simple', 'doc'))`,
    );
    await pool.query(`INSERT INTO search_docs (asset_id, doc) VALUES ('g4-new', '{"from": "search_docs"}'::jsonb)`);
    const page = await call(principal(4, 1, 1), 'POST', '/api/v1/assets/search', { query: 'doc', extended: true, sort: [{ field: 'size', order: 'desc' }] });
    expect(page.body.results).toEqual([
      { from: 'search_docs', score: expect.any(Number) },
      { from: 'row', score: expect.any(Number) },
    ]);
  });

  it('answers wrong types and unknown members with 400 and details', async () => {
    const bad = await call(principal(1, 1, 1), 'POST', '/api/v1/assets/search', { query: 5, filters: { size: { min: 'big' } }, colour: 'red' });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('VALIDATION_FAILED');
    expect(bad.body.error.details.length).toBeGreaterThanOrEqual(3);
  });
});

describe('a set matched and stored in the database (issue 33)', () => {
  it('stores the set match() finds and ResultSetRepository.save would store, answers its first page, and sends no id of the set to the service', async () => {
    const index = new PgSearchIndex(pool);
    const sets = new ResultSetRepository(pool);
    const owner = { groupId: 1, userId: 77 };
    const scope = { groupId: 1, userId: 77 };
    // Capped keyword (ranked, ties by id), filters with facets, a sort by a column, one of a custom field, none.
    await pool.query(`UPDATE search_index SET data = jsonb_build_object('n', size % 7) WHERE group_id = 1 AND size <= 50`);
    await pool.query(`UPDATE search_index SET labels = ARRAY['cat', 'tag' || (size % 3)] WHERE group_id = 1 AND size BETWEEN 20 AND 90`);
    const bodies = [
      { query: 'photo', page_size: 7 },
      { query: 'photo 1', filters: { size: { max: 500 } }, facets: ['creator_id', 'status'] },
      {
        filters: { size: { max: 50 } },
        sort: [
          { field: 'data.n', order: 'desc' },
          { field: 'size', order: 'asc' },
        ],
        page_size: 3,
      },
      { sort: [{ field: 'name', order: 'asc' }], page_size: 100 },
      { query: 'nothing-matches-this' },
      // A keyword with facets: matched, counted and stored by one statement (issue 33).
      {
        query: 'photo',
        facets: ['tags', 'data.n', 'creator_id', 'status', 'content_type', 'status'],
        sort: [
          { field: 'data.n', order: 'desc' },
          { field: 'relevance', order: 'desc' },
        ],
        page_size: 5,
      },
      { query: 'photo 2', filters: { size: { max: 2000 } }, facets: ['creator_id', 'data.none', 'tags'] },
      { query: 'nothing-matches-this', facets: ['status', 'tags'] },
    ];
    const sent: string[] = [];
    const counting = new PgSearchIndex({
      query: (text: string, values?: unknown[]) => {
        sent.push(JSON.stringify(values ?? []));
        return pool.query(text, values);
      },
    } as unknown as Pool);
    for (const [i, body] of bodies.entries()) {
      const request = searchRequest.parse(body);
      const { hits, facets } = await index.match(request, scope, RESULT_CAP + 1);
      const id = `${i}`.padStart(32, 'a');
      sent.length = 0;
      const saved = await counting.matchAndSave(request, scope, RESULT_CAP, { id, page_size: request.page_size, extended: false }, owner, 60_000);
      const kept = hits.slice(0, RESULT_CAP);
      expect(await sets.find(id, owner)).toEqual({
        id,
        ids: kept.map((h) => h.id),
        scores: kept.map((h) => h.score),
        capped: hits.length > RESULT_CAP,
        page_size: request.page_size,
        extended: false,
        facets,
      });
      const firstIds = kept.slice(0, request.page_size).map((h) => h.id);
      expect(saved).toEqual({
        firstIds,
        firstScores: kept.slice(0, request.page_size).map((h) => h.score),
        total: kept.length,
        capped: hits.length > RESULT_CAP,
        facets,
        // The first page's assets, read by the same statement (issue 33), as assets() reads them (no doc: not extended).
        firstAssets: expect.arrayContaining((await index.assets(firstIds)).map((a) => ({ ...a, doc: null }))),
      });
      expect(saved.firstAssets).toHaveLength(firstIds.length);
      // What the service sent: the request's values, never the set's ids.
      expect(sent.join(' ')).not.toContain(kept[request.page_size]?.id ?? 'no-such-id');
      // A keyword with facets is one statement (the match and its facets from one scan; three statements before).
      if (request.query && request.facets.length > 0) expect(sent).toHaveLength(1);
      // The first page's facets as match() answers them, to the order of their keys.
      expect(JSON.stringify(saved.facets)).toBe(JSON.stringify(facets));
    }
    expect((await sets.find(`${0}`.padStart(32, 'a'), owner))?.ids).toHaveLength(RESULT_CAP);
    // Stored without compression (issue 33: pglz spent about 10 ms a full set to save a tenth of its bytes).
    const stored = await pool.query(`SELECT pg_column_compression(ids) AS ids, pg_column_compression(scores) AS scores FROM result_sets WHERE id = $1`, [
      `${0}`.padStart(32, 'a'),
    ]);
    expect(stored.rows).toEqual([{ ids: null, scores: null }]);
  });
});

describe('a search is one statement (issue 33)', () => {
  it('matches, stores and reads the first page of a keyword search (with or without facets) by one statement, the same page as a page GET', async () => {
    const sent: string[] = [];
    const counting = {
      query: (text: string, values?: unknown[]) => {
        sent.push(text);
        return pool.query(text, values);
      },
    } as unknown as Pool;
    const deps = { index: new PgSearchIndex(counting), resultSets: new ResultSetRepository(pool), resultSetTtlMs: 60_000 };
    const who = { groupId: 1, userId: 1, ownOnly: false, maySearchTrash: true };
    for (const body of [{ query: 'photo 12' }, { query: 'photo 12', facets: ['status'] }, { query: 'photo 12', extended: true }]) {
      sent.length = 0;
      const first = await searchAssets(deps, who, searchRequest.parse(body));
      // Two before: the stored match, then the first page's assets.
      expect({ body, statements: sent.length }).toEqual({ body, statements: 1 });
      expect(first.results).toHaveLength(25);
      expect(await searchPage(deps, who, first.search_result_id, 1)).toEqual(first);
    }
  });
});

describe('relevance (issue 33)', () => {
  // Group 5: 240 assets whose words sit at weights A, B and C in several mixes, so scores differ and tie.
  const WORDS = ['beach', 'beacon', 'bear', 'sun', 'sunset', 'rio', 'city'];
  beforeAll(async () => {
    await pool.query(
      `INSERT INTO search_index (asset_id, group_id, version, indexed, status, name, content_type, size, creator_id, upload_time, update_time, doc, tsv)
       SELECT 'g5-' || lpad(i::text, 4, '0'), 5, 1, true, 'OK', 'r' || i || '.jpg', 'image/jpeg', i % 9, 1, now(), now(), '{}'::jsonb,
              setweight(to_tsvector('simple', w[1 + i % 7] || ' ' || w[1 + (i / 7) % 7]), 'A')
              || setweight(to_tsvector('simple', w[1 + (i * 3) % 7] || ' ' || w[1 + (i * 5) % 7] || ' ' || w[1 + i % 7]), 'B')
              || setweight(to_tsvector('simple', repeat(w[1 + (i / 3) % 7] || ' ', 1 + i % 4)), 'C')
       FROM generate_series(1, 240) AS i, (SELECT $1::text[] AS w) v`,
      [WORDS],
    );
  });

  it('ranks, caps and stores as ts_rank of the prefix query scores each match (ts_rank_cd before), the query made once per statement', async () => {
    const index = new PgSearchIndex(pool);
    const sets = new ResultSetRepository(pool);
    const scope = { groupId: 5, userId: 1 };
    const cap = 40;
    // What each request's order is: relevance (ties by id), or a sort with relevance after it.
    const cases: Array<{ body: object; words: string[]; order: string }> = [
      { body: { query: 'beach' }, words: ['beach'], order: 'score DESC' },
      { body: { query: 'bea' }, words: ['bea'], order: 'score DESC' },
      { body: { query: 'SUN beach' }, words: ['sun', 'beach'], order: 'score DESC' },
      { body: { query: 'Río c' }, words: ['rio', 'c'], order: 'score DESC' },
      {
        body: {
          query: 's',
          sort: [
            { field: 'size', order: 'asc' },
            { field: 'relevance', order: 'desc' },
          ],
        },
        words: ['s'],
        order: 'size ASC NULLS LAST, score DESC',
      },
      { body: { query: 'nothing' }, words: ['nothing'], order: 'score DESC' },
    ];
    for (const [i, { body, words, order }] of cases.entries()) {
      // The reference: each match scored by its own to_tsquery, as the service's SQL did before.
      const q = words.map((w) => `'${w}':*`).join(' & ');
      const want = (
        await pool.query<{ asset_id: string; score: number }>(
          `SELECT asset_id, ts_rank(tsv, to_tsquery('simple', $2))::real AS score, size FROM search_index
           WHERE group_id = $1 AND indexed AND NOT deleted AND tsv @@ to_tsquery('simple', $2) ORDER BY ${order}, asset_id ASC`,
          [5, q],
        )
      ).rows.map((r) => ({ id: r.asset_id, score: Number(r.score) }));
      if (words[0] !== 'nothing') expect(want.length).toBeGreaterThan(cap);
      if (i === 0) expect(new Set(want.map((w) => w.score)).size).toBeGreaterThan(3);
      const request = searchRequest.parse({ ...body, page_size: 7 });
      expect({ body, hits: (await index.match(request, scope, cap + 1)).hits }).toEqual({ body, hits: want.slice(0, cap + 1) });
      const id = `${i}`.padStart(32, 'e');
      const saved = await index.matchAndSave(request, scope, cap, { id, page_size: 7, extended: false }, { groupId: 5, userId: 1 }, 60_000);
      const stored = await sets.find(id, { groupId: 5, userId: 1 });
      expect({ body, ids: stored?.ids, scores: stored?.scores, capped: stored?.capped, total: saved.total, first: saved.firstIds }).toEqual({
        body,
        ids: want.slice(0, cap).map((w) => w.id),
        scores: want.slice(0, cap).map((w) => w.score),
        capped: want.length > cap,
        total: Math.min(cap, want.length),
        first: want.slice(0, 7).map((w) => w.id),
      });
    }
    // The tsquery is an InitPlan's value: no scored row parses it again (every row did before).
    const sent: Array<{ text: string; values: unknown[] }> = [];
    const capturing = new PgSearchIndex({
      query: (text: string, values: unknown[] = []) => {
        sent.push({ text, values });
        return pool.query(text, values);
      },
    } as unknown as Pool);
    await capturing.match(searchRequest.parse({ query: 'beach sun' }), scope, cap + 1);
    const [matchSql] = sent;
    const plan = (await pool.query<{ 'QUERY PLAN': string }>(`EXPLAIN VERBOSE ${matchSql?.text}`, matchSql?.values)).rows.map((r) => r['QUERY PLAN']);
    expect(plan.filter((line) => line.includes('ts_rank(')).length).toBeGreaterThan(0);
    expect(plan.filter((line) => line.includes('ts_rank(') && line.includes('to_tsquery('))).toEqual([]);
    // The stored set's one sort compares ids as bytes, and its arrays are built in that order without sorting again
    // (before: the ids through the database's collation, and array_agg(... ORDER BY rn) sorted 10,000 rows twice more).
    sent.length = 0;
    await capturing.matchAndSave(searchRequest.parse({ query: 'beach' }), scope, cap, { id: 'f'.repeat(32), page_size: 7, extended: false }, scope, 60_000);
    const [storeSql] = sent;
    const stored = (await pool.query<{ 'QUERY PLAN': string }>(`EXPLAIN VERBOSE ${storeSql?.text}`, storeSql?.values)).rows.map((r) => r['QUERY PLAN']);
    expect(stored.filter((line) => line.includes('Sort Key:'))).toEqual([expect.stringContaining('asset_id COLLATE "C"')]);
    expect(stored.filter((line) => /array_agg\([^)]*ORDER BY/.test(line))).toEqual([]);
  });
});

describe('a set is a snapshot (CONTRACT §8)', () => {
  it('pages through the set page 1 came from, whatever changed in the model between the search and the page', async () => {
    // Group 7: 30 matches with scores that differ (the word 1-3 times at weight B, once at A for some).
    await pool.query(
      `INSERT INTO search_index (asset_id, group_id, version, indexed, status, name, content_type, size, creator_id, upload_time, update_time, doc, tsv)
       SELECT 'g7-' || lpad(i::text, 2, '0'), 7, 1, true, 'OK', 'n' || i, 'image/jpeg', i, 1, now(), now(), '{}'::jsonb,
              setweight(to_tsvector('simple', CASE WHEN i % 4 = 0 THEN 'tide' ELSE 'x' END), 'A') || setweight(to_tsvector('simple', repeat('tide ', 1 + i % 3)), 'B')
       FROM generate_series(1, 30) AS i`,
    );
    const admin = principal(7, 1, 1);
    const want = (await new PgSearchIndex(pool).match(searchRequest.parse({ query: 'tide' }), { groupId: 7, userId: 1 }, 100)).hits.map((h) => h.id);
    expect(want).toHaveLength(30);
    const first = await call(admin, 'POST', '/api/v1/assets/search', { query: 'tide', page_size: 10 });
    expect(first.body).toMatchObject({ page: 1, pages: 3, total: 30, total_is_capped: false });
    expect(first.body.results.map((r: { id: string }) => r.id)).toEqual(want.slice(0, 10));
    // Then: five new assets that would rank first, one of page 2 no longer matches, one of page 3 trashed, one renamed.
    await pool.query(
      `INSERT INTO search_index (asset_id, group_id, version, indexed, status, name, content_type, size, creator_id, upload_time, update_time, doc, tsv)
       SELECT 'g7-new' || i, 7, 1, true, 'OK', 'tide', 'image/jpeg', 1, 1, now(), now(), '{}'::jsonb, setweight(to_tsvector('simple', 'tide tide tide'), 'A')
       FROM generate_series(1, 5) AS i`,
    );
    await pool.query(`UPDATE search_index SET tsv = to_tsvector('simple', 'ebb'), version = 2 WHERE asset_id = $1`, [want[12]]);
    await pool.query(`UPDATE search_index SET deleted = true, version = 2 WHERE asset_id = $1`, [want[25]]);
    await pool.query(`UPDATE search_index SET name = 'renamed', version = 2 WHERE asset_id = $1`, [want[15]]);
    const id = first.body.search_result_id as string;
    for (const page of [2, 3, 1]) {
      const got = await call(admin, 'GET', `/api/v1/assets/search/${id}/${page}`);
      expect({ page, status: got.status, total: got.body.total, pages: got.body.pages, ids: got.body.results.map((r: { id: string }) => r.id) }).toEqual({
        page,
        status: 200,
        total: 30,
        pages: 3,
        ids: want.slice((page - 1) * 10, page * 10),
      });
    }
    // A page shows each asset as it is now; a new search sees the new model.
    expect((await call(admin, 'GET', `/api/v1/assets/search/${id}/2`)).body.results[5]).toMatchObject({ id: want[15], name: 'renamed' });
    const again = await call(admin, 'POST', '/api/v1/assets/search', { query: 'tide', page_size: 10 });
    expect(again.body.total).toBe(33);
    expect(again.body.results.slice(0, 5).map((r: { id: string }) => r.id)).toEqual(['g7-new1', 'g7-new2', 'g7-new3', 'g7-new4', 'g7-new5']);
  });
});

describe('relevance order (issue 33)', () => {
  it('ranks a word in the name above the same word in the searchable text, and more occurrences above fewer', async () => {
    // Group 6: the word at weight A (the name) or B (service_search_txt, schema fields, addon terms), once or twice.
    await pool.query(
      `INSERT INTO search_index (asset_id, group_id, version, indexed, status, name, content_type, size, creator_id, upload_time, update_time, doc, tsv)
       SELECT id, 6, 1, true, 'OK', id, 'image/jpeg', 1, 1, now(), now(), '{}'::jsonb, tsv::tsvector
       FROM (VALUES ('g6-a-text-once', setweight(to_tsvector('simple', 'x'), 'A') || setweight(to_tsvector('simple', 'lagoon'), 'B')),
                    ('g6-b-name', setweight(to_tsvector('simple', 'lagoon'), 'A')),
                    ('g6-c-text-twice', setweight(to_tsvector('simple', 'x'), 'A') || setweight(to_tsvector('simple', 'lagoon lagoon'), 'B')),
                    ('g6-d-name-and-text', setweight(to_tsvector('simple', 'lagoon'), 'A') || setweight(to_tsvector('simple', 'lagoon'), 'B')),
                    ('g6-e-other', setweight(to_tsvector('simple', 'river'), 'A'))) AS v(id, tsv)`,
    );
    const page = await call(principal(6, 1, 1), 'POST', '/api/v1/assets/search', { query: 'lagoo' });
    expect(page.body.results.map((r: { id: string }) => r.id)).toEqual(['g6-d-name-and-text', 'g6-b-name', 'g6-c-text-twice', 'g6-a-text-once']);
    const scores = page.body.results.map((r: { score: number }) => r.score);
    expect([...scores].sort((a, b) => b - a)).toEqual(scores);
    expect(new Set(scores).size).toBe(4);
  });
});

describe('the collection filter', () => {
  it("matches a collection the caller sees (its own or a shared one); another user's private one, a deleted one or another group's matches nothing", async () => {
    const index = new SearchIndexRepository(pool);
    const message = (subject: string, body: unknown) => applyCollectionMessage(index, subject, body);
    const member = (asset: string, ids: string[], version: number, group = 1) =>
      message(`dam.collections.${group}.asset.${asset}`, { id: `m-${asset}-${version}`, group_id: group, asset_id: asset, collection_ids: ids, version });
    const state = (id: string, owner: number, shared: boolean, deleted = false, group = 1) =>
      message(`dam.collections.${group}.collection.${id}`, { id: `c-${id}-${deleted}`, group_id: group, collection_id: id, owner_id: owner, shared, deleted });
    await state('mine', 1, false);
    await state('team', 2, true);
    await state('gone', 1, true);
    await state('theirs', 9, true, false, 2);
    for (const a of ['g1-000001', 'g1-000002', 'g1-000003']) await member(a, ['mine'], 1);
    await member('g1-000004', ['team', 'gone'], 1);
    // An older list never replaces a newer one.
    await member('g1-000003', ['mine', 'team'], 3);
    await member('g1-000003', ['mine'], 2);
    await state('gone', 1, true, true);
    await member('g2-1', ['theirs'], 1, 2);

    const ids = async (p: Principal, collection: string) =>
      (
        (await call(p, 'POST', '/api/v1/assets/search', { filters: { collection_id: collection }, sort: [{ field: 'name', order: 'asc' }] })).body
          .results as Array<{ id: string }>
      ).map((r) => r.id);
    const owner = principal(1, 1, 3);
    const colleague = principal(1, 2, 3);
    expect(await ids(owner, 'mine')).toEqual(['g1-000001', 'g1-000002', 'g1-000003']);
    expect(await ids(colleague, 'mine')).toEqual([]);
    expect(await ids(colleague, 'team')).toEqual(['g1-000003', 'g1-000004']);
    expect(await ids(owner, 'team')).toEqual(['g1-000003', 'g1-000004']);
    expect(await ids(owner, 'gone')).toEqual([]);
    expect(await ids(owner, 'theirs')).toEqual([]);
    expect(await ids(principal(2, 9, 1), 'theirs')).toEqual(['g2-1']);
    expect(await ids(owner, 'no-such-collection')).toEqual([]);
  });
});
