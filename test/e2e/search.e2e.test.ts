/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are untyped JSON; the assertions check them */
import { waitFor } from '@dam/testing';
import { login, useSuite } from './suite';

const e2e = useSuite();
const { call, upload } = e2e.api;

const search = (body: unknown, token = e2e.jwt) => call('POST', '/api/v1/assets/search', body, token);
const idsOf = (r: { body: any }) => (r.body.results as Array<{ id: string }>).map((x) => x.id);
/** The read model follows the events: wait until a search sees what it should. */
const until = <T>(probe: () => Promise<T | undefined>, what: string) => waitFor(probe, { timeoutMs: 15_000, intervalMs: 100, description: what });

describe('search over the read model', () => {
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    ids.beach = await upload(Buffer.from('a'.repeat(100)), 'Beach_Sunset.txt');
    ids.cafe = await upload(Buffer.from('b'.repeat(2000)), 'Café notes.txt');
    ids.report = await upload(Buffer.from('c,d\n1,2\n'), 'report-2026.csv');
    const upd = await call('POST', `/api/v1/assets/${ids.report}/data/update`, {
      data: { service_search_txt: 'quarterly finance summary', rating: 4, camera: 'X100' },
      mode: 'APPEND',
    });
    expect(upd.status).toBe(200);
    await call('POST', `/api/v1/assets/${ids.beach}/data/update`, { data: { rating: 2, camera: 'X100' }, mode: 'APPEND' });
    // Both updates applied (the beach's came last).
    await until(async () => {
      const r = await search({ filters: { data: { camera: 'X100' } } });
      return r.body?.results?.length === 2 ? r : undefined;
    }, 'the read model to catch up');
  });

  it('finds by keyword prefix in the name and in service_search_txt, accents folded, with a score', async () => {
    const r = await search({ query: 'beach sun' });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      search_result_id: expect.stringMatching(/^[0-9a-f]{32}$/),
      page: 1,
      pages: 1,
      page_size: 25,
      total: 1,
      total_is_capped: false,
    });
    expect(r.body.results[0]).toMatchObject({
      id: ids.beach,
      name: 'Beach_Sunset.txt',
      size: 100,
      status: 'OK',
      upload_time: expect.any(String),
      score: expect.any(Number),
    });
    expect(idsOf(await search({ query: 'cafe' }))).toEqual([ids.cafe]);
    expect(idsOf(await search({ query: 'FINAN' }))).toEqual([ids.report]);
    expect(idsOf(await search({ query: 'nothing-like-this' }))).toEqual([]);
  });

  it('filters by name glob, content type with a wildcard, size, status and custom data (equality and range)', async () => {
    expect(idsOf(await search({ filters: { name: 'report-*' } }))).toEqual([ids.report]);
    expect(idsOf(await search({ filters: { content_type: ['text/*'] }, sort: [{ field: 'name', order: 'asc' }] }))).toEqual([ids.beach, ids.cafe, ids.report]);
    expect(idsOf(await search({ filters: { content_type: ['image/*', 'video/mp4'] } }))).toEqual([]);
    expect(idsOf(await search({ filters: { size: { min: 1000 } } }))).toEqual([ids.cafe]);
    expect(idsOf(await search({ filters: { data: { camera: 'X100', rating: { from: 3 } } } }))).toEqual([ids.report]);
    expect(idsOf(await search({ filters: { status: ['ERROR'] } }))).toEqual([]);
    expect(idsOf(await search({ filters: { status: ['OK'], creator_id: 1 } })).length).toBe(3);
    expect(idsOf(await search({ filters: { creator_id: 999 } }))).toEqual([]);
    const future = new Date(Date.now() + 3_600_000).toISOString();
    expect(idsOf(await search({ filters: { upload_time: { from: future } } }))).toEqual([]);
    expect(idsOf(await search({ filters: { upload_time: { to: future }, update_time: { to: future } } })).length).toBe(3);
  });

  it('sorts by name, size and data fields, and counts facets over the whole result', async () => {
    expect(idsOf(await search({ sort: [{ field: 'name', order: 'asc' }] }))).toEqual([ids.beach, ids.cafe, ids.report]);
    expect(idsOf(await search({ sort: [{ field: 'size', order: 'desc' }] }))[0]).toBe(ids.cafe);
    // The beach's custom data was updated last, the report's before it; the café never was.
    expect(idsOf(await search({ sort: [{ field: 'update_time', order: 'desc' }] }))).toEqual([ids.beach, ids.report, ids.cafe]);
    expect(idsOf(await search({ sort: [{ field: 'upload_time', order: 'asc' }] }))).toEqual([ids.beach, ids.cafe, ids.report]);
    expect(idsOf(await search({ filters: { data: { camera: 'X100' } }, sort: [{ field: 'data.rating', order: 'asc' }] }))).toEqual([ids.beach, ids.report]);
    const f = await search({ page_size: 1, facets: ['content_type', 'data.camera'] });
    expect(f.body.total).toBe(3);
    const total = (f.body.facets.content_type as Array<{ count: number }>).reduce((n, x) => n + x.count, 0);
    expect(total).toBe(3);
    expect(f.body.facets['data.camera']).toEqual([{ value: 'X100', count: 2 }]);
  });

  it('pages a stored result, and refuses a page beyond it and bad requests with details', async () => {
    const first = await search({ page_size: 2, sort: [{ field: 'name', order: 'asc' }] });
    expect(first.body).toMatchObject({ pages: 2, total: 3 });
    const second = await call('GET', `/api/v1/assets/search/${first.body.search_result_id}/2`);
    expect(second.status).toBe(200);
    expect(idsOf(second)).toEqual([ids.report]);
    expect((await call('GET', `/api/v1/assets/search/${first.body.search_result_id}/3`)).status).toBe(400);
    expect((await call('GET', `/api/v1/assets/search/${'0'.repeat(32)}/1`)).status).toBe(404);
    const bad = await search({ sort: [{ field: 'colour' }], page_size: 101 });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details.map((d: any) => d.path).sort()).toEqual(['page_size', 'sort.0.field']);
  });

  it("accepts the contract's example request as it is written", async () => {
    const example = {
      query: 'beach sunset',
      filters: {
        name: 'IMG_*',
        content_type: ['image/*'],
        upload_time: { from: '2020-01-01T00:00:00Z', to: '2030-01-01T00:00:00Z' },
        size: { min: 0, max: 1000000 },
        status: ['OK'],
        creator_id: 7,
        collection_id: 'c1',
        data: { rating: { from: 3 }, camera: 'X100' },
      },
      sort: [{ field: 'upload_time', order: 'desc' }],
      page_size: 25,
      extended: false,
      trashed: false,
      facets: ['content_type', 'creator_id', 'data.camera', 'tags'],
    };
    const r = await search(example);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ total: 0, results: [], facets: { content_type: [], creator_id: [], 'data.camera': [], tags: [] } });
    // Without the filters that match nothing here, the facets count the match.
    const open = await search({ query: 'beach sunset', facets: ['content_type', 'tags'] });
    expect(open.body.facets).toEqual({ content_type: [{ value: 'text/plain', count: 1 }], tags: [] });
  });

  it('answers the deprecated paths the same, with Deprecation, Sunset and Link headers', async () => {
    const r = await call('POST', '/api/v1/search', { query: 'beach' });
    expect(r.status).toBe(200);
    expect(idsOf(r)).toEqual([ids.beach]);
    expect(r.headers.get('deprecation')).toBe('true');
    expect(r.headers.get('sunset')).toBe('Wed, 01 Dec 2027 00:00:00 GMT');
    expect(r.headers.get('link')).toBe('</api/v1/assets/search>; rel="successor-version"');
    const page = await call('GET', `/api/v1/search/${r.body.search_result_id}/1`);
    expect(page.status).toBe(200);
    expect(page.headers.get('link')).toBe(`</api/v1/assets/search/${r.body.search_result_id}/1>; rel="successor-version"`);
  });

  it('returns the full asset data when extended, finds trashed assets for ADMIN only, and scopes a CREATOR to its own', async () => {
    const ext = await search({ query: 'report', extended: true });
    expect(ext.body.results[0]).toMatchObject({ id: ids.report, checksum: expect.any(String), data: { rating: 4 }, conversions: {} });

    expect((await call('POST', `/api/v1/assets/${ids.cafe}/delete`, { keys: ['original'] })).status).toBe(200);
    await until(async () => (idsOf(await search({ query: 'cafe', trashed: true })).length === 1 ? true : undefined), 'the trash in the read model');
    expect(idsOf(await search({ query: 'cafe' }))).toEqual([]);

    const created = await call('POST', '/api/v1/users', { email: 'creator@example.com', password: 'creator-password-1', role_id: 4 });
    expect(created.status).toBe(201);
    const creator = await login(e2e.suite.base, 'creator@example.com', 'creator-password-1');
    const own = await upload(Buffer.from('mine'), 'mine-only.txt', creator);
    await until(async () => (idsOf(await search({}, creator)).length === 1 ? true : undefined), "the creator's upload in the read model");
    expect(idsOf(await search({}, creator))).toEqual([own]);
    expect((await search({ trashed: true }, creator)).status).toBe(403);
  });
});

describe('searchable schema fields', () => {
  it("finds a keyword in a field the asset's schema makes searchable, and stops when the schema no longer does", async () => {
    const definition = (searchable: boolean) => ({
      name: 'places',
      schema: { type: 'object', properties: { location: { type: 'string' }, note: { type: 'string' } } },
      service_properties: { location: { searchable }, note: { searchable: false } },
    });
    const created = await call('POST', '/api/v1/schemas', definition(true));
    expect(created.status).toBe(201);
    const id = await upload(Buffer.from('holiday'), 'holiday.txt');
    await until(async () => ((await call('GET', `/api/v1/assets/${id}/data`)).body?.status === 'OK' ? true : undefined), 'the asset OK');
    const upd = await call('POST', `/api/v1/assets/${id}/data/update`, {
      data: { location: 'Reykjavík harbour', note: 'private words' },
      mode: 'APPEND',
      data_schema_id: created.body.schema_id,
    });
    expect(upd.status).toBe(200);
    await until(async () => {
      const r = await search({ query: 'reykjav' });
      return idsOf(r).includes(id) ? r : undefined;
    }, 'the searchable field to be indexed');
    expect(idsOf(await search({ query: 'private' }))).toEqual([]);
    // The schema changes: its assets are indexed again without the field.
    expect((await call('PUT', `/api/v1/schemas/${created.body.schema_id}`, definition(false))).status).toBe(200);
    await until(async () => {
      const r = await search({ query: 'reykjav' });
      return r.status === 200 && !idsOf(r).includes(id) ? r : undefined;
    }, 'the field to leave the index');
    expect(idsOf(await search({ query: 'holiday' }))).toEqual([id]);
  });
});

describe('collections', () => {
  it("keeps a collection's assets, finds them with the collection filter, and lets a CREATOR look but not change", async () => {
    const made = await call('POST', '/api/v1/collections', { name: 'Shortlist', shared: true });
    expect(made).toMatchObject({ status: 201, body: { name: 'Shortlist', shared: true, owner_id: 1, asset_count: 0 } });
    const id = made.body.collection_id;
    const a = await upload(Buffer.from('a'), 'short-a.txt');
    const b = await upload(Buffer.from('b'), 'short-b.txt');
    expect((await call('POST', `/api/v1/collections/${id}/assets`, { ids: [a, b] })).body.asset_count).toBe(2);
    const inIt = async () => idsOf(await search({ filters: { collection_id: id }, sort: [{ field: 'name', order: 'asc' }] }));
    await until(async () => ((await inIt()).length === 2 ? true : undefined), 'both members in the read model');
    expect(await inIt()).toEqual([a, b]);
    expect((await call('DELETE', `/api/v1/collections/${id}/assets`, { ids: [a] })).body.asset_count).toBe(1);
    await until(async () => ((await inIt()).join() === b ? true : undefined), 'the removal in the read model');
    expect((await call('GET', `/api/v1/collections/${id}`)).body).toMatchObject({ total: 1, items: [{ id: b, name: 'short-b.txt' }] });

    // A CREATOR sees the shared collection (only its own assets in it) but may not change collections.
    const creator = await login(e2e.suite.base, 'creator@example.com', 'creator-password-1');
    expect((await call('GET', `/api/v1/collections/${id}`, undefined, creator)).body).toMatchObject({ collection_id: id, total: 0, items: [] });
    expect((await call('POST', '/api/v1/collections', { name: 'nope' }, creator)).status).toBe(403);
    expect((await call('POST', `/api/v1/collections/${id}/assets`, { ids: [b] }, creator)).status).toBe(403);
    expect((await call('DELETE', `/api/v1/collections/${id}`)).status).toBe(200);
    await until(async () => ((await inIt()).length === 0 ? true : undefined), 'the deleted collection out of the read model');
  });
});

describe('purge', () => {
  it('takes purged assets out of the trash search too', async () => {
    const id = await upload(Buffer.from('bye'), 'to-be-purged.txt');
    await until(async () => ((await call('GET', `/api/v1/assets/${id}/data`)).body?.status === 'OK' ? true : undefined), 'the asset OK');
    expect((await call('POST', `/api/v1/assets/${id}/delete`, { keys: ['original'] })).status).toBe(200);
    await until(async () => (idsOf(await search({ query: 'purged', trashed: true })).includes(id) ? true : undefined), 'the asset in the trash search');
    const stored = (await search({ query: 'purged', trashed: true })).body.search_result_id as string;
    const purge = await call('DELETE', '/api/v1/assets/trash/purge');
    expect(purge.status).toBe(202);
    await until(async () => ((await call('GET', `/api/v1/jobs/${purge.body.job_id}`)).body?.status === 'COMPLETED' ? true : undefined), 'the purge');
    await until(async () => (idsOf(await search({ query: 'purged', trashed: true })).includes(id) ? undefined : true), 'the purge in the read model');
    // A result set stored before the purge pages without it.
    const page = await call('GET', `/api/v1/assets/search/${stored}/1`);
    expect(page.status).toBe(200);
    expect(idsOf(page)).not.toContain(id);
  });
});
