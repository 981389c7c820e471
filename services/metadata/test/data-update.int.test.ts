/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are untyped JSON; the assertions check them */
import { createHash } from 'node:crypto';
import { ASSET_EVENTS, FILE_DATA_UPDATED } from '@dam/events';
import { waitFor } from '@dam/testing';
import { assetId, collect, postAsset, principal, signedFetch, startMetadata, type Harness } from './harness';

let h: Harness;
let events: Awaited<ReturnType<typeof collect>>;
beforeAll(async () => {
  h = await startMetadata();
  events = await collect(h.nc, ASSET_EVENTS, `assets.events.${GROUP}.file-data-updated`);
});
afterAll(async () => {
  await events?.stop();
  await h?.stop();
});

const GROUP = 16;
const admin = principal({ group_id: GROUP, user_id: 1 });
const user = principal({ group_id: GROUP, user_id: 3, role: 'USER' });

async function create(p = admin, contentType = 'text/plain', custom?: unknown): Promise<{ status: number; id: string; body: any }> {
  const id = assetId();
  return postAsset(h, p, { id, name: 'n.txt', size: 1, checksum: createHash('md5').update(id).digest('hex'), contentType }, custom);
}

async function update(id: string, body: unknown, p = admin, query = ''): Promise<{ status: number; body: any }> {
  const res = await signedFetch(`${h.url}/api/v1/assets/${id}/data/update${query}`, p, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

const data = async (id: string): Promise<any> => (await signedFetch(`${h.url}/api/v1/assets/${id}/data`, admin)).json();

async function createSchema(schema: unknown, name = 'product'): Promise<number> {
  const res = await signedFetch(`${h.url}/api/v1/schemas`, admin, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name, schema, service_properties: {} }),
  });
  expect(res.status).toBe(201);
  return ((await res.json()) as any).schema_id;
}

describe('Update Data (endpoint 12)', () => {
  it('APPEND merges, REPLACE overwrites, each answered with the asset and raising file-data-updated', async () => {
    const { id } = await create();
    const appended = await update(id, { data: { a: 1, b: 'x' }, mode: 'APPEND' });
    expect(appended).toMatchObject({ status: 200, body: { id, status: 'OK', data: { a: 1, b: 'x' } } });
    expect((await update(id, { data: { b: 'y', c: true }, mode: 'APPEND' })).body.data).toEqual({ a: 1, b: 'y', c: true });
    expect((await update(id, { data: { only: 1 }, mode: 'REPLACE' })).body.data).toEqual({ only: 1 });
    expect((await data(id)).data).toEqual({ only: 1 });
    await waitFor(() => events.messages.filter((m) => m.payload.asset_id === id).length === 3, { description: 'three file-data-updated' });
    const last = FILE_DATA_UPDATED.schema.parse(events.messages.filter((m) => m.payload.asset_id === id)[2]?.payload);
    expect(last.data).toMatchObject({ id, data: { only: 1 } });
  });

  it('takes exactly 2000 characters of data and answers 413 at 2001', async () => {
    const { id } = await create();
    const sized = (n: number) => ({ k: 'x'.repeat(n - '{"k":""}'.length) });
    expect(JSON.stringify(sized(2000)).length).toBe(2000);
    expect((await update(id, { data: sized(2000), mode: 'REPLACE' })).status).toBe(200);
    const over = await update(id, { data: sized(2001), mode: 'REPLACE' });
    expect(over).toMatchObject({ status: 413, body: { error: { code: 'DATA_TOO_LARGE' } } });
    // The limit is on the result: appending to 2000 characters goes over too.
    expect((await update(id, { data: { more: 1 }, mode: 'APPEND' })).status).toBe(413);
  });

  it('answers 400 for reserved keys, a missing mode, bad bodies and a NOT_READY asset; 404, 403 as for the asset', async () => {
    const { id } = await create();
    for (const body of [
      { data: { _service_x: 1 }, mode: 'APPEND' },
      { data: { a: 1 } },
      { data: [], mode: 'APPEND' },
      { mode: 'APPEND' },
      { data: {}, mode: 'MERGE' },
    ]) {
      const res = await update(id, body);
      expect({ body, status: res.status, code: res.body.error?.code }).toEqual({ body, status: 400, code: 'VALIDATION_FAILED' });
    }
    expect((await update(id, { data: {}, mode: 'APPEND' }, admin, '?async=2')).status).toBe(400);
    const image = await create(admin, 'image/png');
    expect((await update(image.id, { data: { a: 1 }, mode: 'APPEND' })).body.error.code).toBe('ASSET_NOT_READY');
    expect((await update('0'.repeat(32), { data: {}, mode: 'APPEND' })).status).toBe(404);
    expect((await update(id, { data: {}, mode: 'APPEND' }, principal({ group_id: GROUP + 1 }))).status).toBe(404);
    expect((await update(id, { data: {}, mode: 'APPEND' }, user)).status).toBe(403);
    const own = await create(user);
    expect((await update(own.id, { data: { mine: true }, mode: 'APPEND' }, user)).status).toBe(200);
  });

  it('applies async=1 later (202), and 20 parallel APPENDs of distinct keys all land, none lost', async () => {
    const { id } = await create();
    const queued = await update(id, { data: { later: 1 }, mode: 'APPEND' }, admin, '?async=1');
    expect(queued).toEqual({ status: 202, body: { id, status: 'QUEUED', message: expect.any(String) } });
    await waitFor(async () => (await data(id)).data.later === 1, { description: 'async update applied' });

    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => update(id, { data: { [`k${i}`]: i }, mode: 'APPEND' })));
    expect(results.every((r) => r.status === 200 || r.status === 202)).toBe(true);
    await waitFor(async () => Object.keys((await data(id)).data).length === 21, { description: 'all 20 keys', timeoutMs: 20_000 });
    const final = (await data(id)).data;
    for (let i = 0; i < 20; i++) expect(final[`k${i}`]).toBe(i);
  });

  it('applies queued updates of one asset in arrival order', async () => {
    const { id } = await create();
    for (let i = 0; i < 10; i++) expect((await update(id, { data: { n: i }, mode: 'APPEND' }, admin, '?async=1')).status).toBe(202);
    // A synchronous update after queued ones waits its turn (202) instead of overtaking them.
    expect((await update(id, { data: { n: 99 }, mode: 'APPEND' })).status).toBe(202);
    await waitFor(async () => (await data(id)).data.n === 99, { description: 'the last update last' });
    const mine = () => events.messages.filter((m) => m.payload.asset_id === id).map((m) => m.payload.data.data.n);
    await waitFor(() => mine().length === 11, { description: 'eleven events' });
    expect(mine()).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 99]);
  });

  it('validates against the assigned schema, listing every problem, and upload custom_metadata follows the same rules', async () => {
    const schemaId = await createSchema({
      type: 'object',
      properties: { sku: { type: 'string', pattern: '^[A-Z]+$' }, qty: { type: 'integer', minimum: 0 } },
      required: ['sku'],
    });
    const { id } = await create();
    const bad = await update(id, { data: { sku: 'lower', qty: -1 }, mode: 'APPEND', data_schema_id: schemaId });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details).toEqual(
      expect.arrayContaining([expect.objectContaining({ path: 'data.sku' }), expect.objectContaining({ path: 'data.qty' })]),
    );
    expect((await update(id, { data: { sku: 'ABC', qty: 2 }, mode: 'APPEND', data_schema_id: schemaId })).status).toBe(200);
    // The schema stays assigned: a later update is checked against it.
    expect((await update(id, { data: { qty: 'many' }, mode: 'APPEND' })).status).toBe(400);
    expect((await update(id, { data: {}, mode: 'APPEND', data_schema_id: 987654 })).status).toBe(400);

    expect((await create(admin, 'text/plain', { data: { qty: 1 }, data_schema_id: schemaId })).status).toBe(400);
    const ok = await create(admin, 'text/plain', { data: { sku: 'OK' }, data_schema_id: schemaId });
    expect(ok.status).toBe(201);
    expect((await data(ok.id)).data).toEqual({ sku: 'OK' });
  });

  it('validates against a schema with an $id, and against a second schema with the same $id by its own rules', async () => {
    // The schema is compiled when it is saved and again, read back, for each update: the same $id each time.
    const $id = 'https://example.com/schemas/product.json';
    const first = await createSchema({ $id, type: 'object', properties: { sku: { type: 'string', maxLength: 4 } } });
    const second = await createSchema({ $id, type: 'object', properties: { sku: { type: 'integer' } } }, 'product-v2');
    const { id } = await create();
    expect((await update(id, { data: { sku: 'AB' }, mode: 'APPEND', data_schema_id: first })).status).toBe(200);
    expect((await update(id, { data: { sku: 'ABCDEF' }, mode: 'APPEND' })).body.error.details).toEqual([expect.objectContaining({ path: 'data.sku' })]);
    expect((await update(id, { data: { sku: 12 }, mode: 'REPLACE', data_schema_id: second })).status).toBe(200);
    expect((await update(id, { data: { sku: 'AB' }, mode: 'REPLACE' })).status).toBe(400);
  });
});
