/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are untyped JSON; the assertions check them */
import path from 'node:path';
import { createPool, migrate, readMigrations } from '@dam/db';
import { OUTBOX_MIGRATION_SQL } from '@dam/outbox';
import { createDatabase, waitFor } from '@dam/testing';
import { DATA_SCHEMAS, dataSchemaSavedSchema, dataSchemaSubject } from '@dam/events';
import { collect, principal, signedFetch, startMetadata, type Harness } from './harness';

let h: Harness;
beforeAll(async () => {
  h = await startMetadata();
});
afterAll(async () => {
  await h?.stop();
});

const GROUP = 18;
const admin = principal({ group_id: GROUP, user_id: 1 });

async function call(method: string, path: string, body?: unknown, p = admin): Promise<{ status: number; body: any }> {
  const res = await signedFetch(`${h.url}${path}`, p, {
    method,
    ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
  });
  return { status: res.status, body: await res.json() };
}

const productSchema = { type: 'object', properties: { sku: { type: 'string' } } };

describe('asset schemas (CONTRACT §5)', () => {
  it('creates a schema with every field, reads it back and lists it after the built-in schema 0', async () => {
    const created = await call('POST', '/api/v1/schemas', {
      name: 'product',
      schema: productSchema,
      service_properties: { sku: { searchable: true, keyword: true, ui: { label: 'SKU' } } },
    });
    expect(created).toEqual({
      status: 201,
      body: {
        schema_id: expect.any(Number),
        name: 'product',
        schema: productSchema,
        service_properties: { sku: { searchable: true, keyword: true, ui: { label: 'SKU' } } },
        created_at: expect.any(String),
        updated_at: expect.any(String),
      },
    });
    expect(created.body.schema_id).toBeGreaterThan(0);
    expect((await call('GET', `/api/v1/schemas/${created.body.schema_id}`)).body).toEqual(created.body);
    const zero = await call('GET', '/api/v1/schemas/0');
    expect(zero.body).toMatchObject({
      schema_id: 0,
      schema: { properties: { service_search_txt: { type: 'string' } } },
      service_properties: { service_search_txt: { searchable: true } },
    });

    await call('POST', '/api/v1/schemas', { name: 'second', schema: true });
    const list = await call('GET', '/api/v1/schemas?page_size=2');
    expect(list.body).toMatchObject({ page: 1, page_size: 2, total: 3 });
    expect(list.body.items.map((s: any) => s.schema_id)).toEqual([0, created.body.schema_id]);
    const page2 = await call('GET', '/api/v1/schemas?page_size=2&page=2');
    expect(page2.body.items.map((s: any) => s.name)).toEqual(['second']);
    expect((await call('GET', '/api/v1/schemas?page_size=101')).status).toBe(400);
  });

  it('refuses invalid JSON Schemas and bodies with 400 and the reason', async () => {
    for (const body of [
      { name: 'x', schema: { type: 'strange' } },
      { name: 'x', schema: { properties: { a: { minimum: 'low' } } } },
      { name: 'x', schema: 'not a schema' },
      { name: '', schema: {} },
      { schema: {} },
      { name: 'x', schema: {}, service_properties: { a: { searchable: 'yes' } } },
    ]) {
      const res = await call('POST', '/api/v1/schemas', body);
      expect({ body, status: res.status, code: res.body.error.code }).toEqual({ body, status: 400, code: 'VALIDATION_FAILED' });
    }
    const res = await call('POST', '/api/v1/schemas', { name: 'x', schema: { type: 'strange' } });
    expect(res.body.error.details[0]).toMatchObject({ path: expect.stringMatching(/^schema/), message: expect.any(String) });
    // A pattern that needs backtracking (security review F2): refused, named; a linear-time one is kept.
    const lookahead = await call('POST', '/api/v1/schemas', { name: 'x', schema: { properties: { p: { type: 'string', pattern: '^(?=.*\\d).+$' } } } });
    expect(lookahead).toMatchObject({
      status: 400,
      body: { error: { code: 'VALIDATION_FAILED', details: [{ path: 'schema', message: expect.stringContaining('"^(?=.*\\\\d).+$"') }] } },
    });
    expect((await call('POST', '/api/v1/schemas', { name: 'x', schema: { properties: { p: { type: 'string', pattern: '^(a|a)*$' } } } })).status).toBe(201);
  });

  it('refuses a caller without MANAGE_SCHEMAS itself, not only at the gateway (security review F3)', async () => {
    const { body: s } = await call('POST', '/api/v1/schemas', { name: 'kept', schema: productSchema });
    for (const role of ['USER', 'CREATOR'] as const) {
      const p = principal({ group_id: GROUP, user_id: 9, role });
      expect(await call('POST', '/api/v1/schemas', { name: 'x', schema: {} }, p)).toMatchObject({ status: 403, body: { error: { code: 'FORBIDDEN' } } });
      expect(await call('PUT', `/api/v1/schemas/${s.schema_id}`, { name: 'x', schema: {} }, p)).toMatchObject({
        status: 403,
        body: { error: { code: 'FORBIDDEN' } },
      });
      expect((await call('GET', `/api/v1/schemas/${s.schema_id}`, undefined, p)).body.name).toBe('kept');
    }
    expect((await call('PUT', `/api/v1/schemas/${s.schema_id}`, { name: 'v2', schema: {} }, principal({ group_id: GROUP, role: 'MANAGER' }))).status).toBe(200);
  });

  it('updates a schema (schema 0 answers 403), and keeps schemas per group (404 elsewhere)', async () => {
    const { body: s } = await call('POST', '/api/v1/schemas', { name: 'v1', schema: productSchema });
    const updated = await call('PUT', `/api/v1/schemas/${s.schema_id}`, {
      name: 'v2',
      schema: { ...productSchema, required: ['sku'] },
      service_properties: {},
    });
    expect(updated).toMatchObject({ status: 200, body: { schema_id: s.schema_id, name: 'v2', schema: { required: ['sku'] } } });
    expect(Date.parse(updated.body.updated_at)).toBeGreaterThanOrEqual(Date.parse(s.updated_at));
    expect((await call('PUT', '/api/v1/schemas/0', { name: 'mine', schema: {} })).status).toBe(403);
    const other = principal({ group_id: GROUP + 1 });
    expect((await call('GET', `/api/v1/schemas/${s.schema_id}`, undefined, other)).body.error.code).toBe('SCHEMA_NOT_FOUND');
    expect((await call('PUT', `/api/v1/schemas/${s.schema_id}`, { name: 'x', schema: {} }, other)).status).toBe(404);
    expect((await call('GET', '/api/v1/schemas/424242')).status).toBe(404);
    // An id of no schema's form is an unknown schema (CONTRACT §16; 400 VALIDATION_FAILED before).
    for (const bad of ['abc', '-1', '99999999999']) {
      expect((await call('GET', `/api/v1/schemas/${bad}`)).body.error.code).toBe('SCHEMA_NOT_FOUND');
      expect((await call('PUT', `/api/v1/schemas/${bad}`, { name: 'x', schema: {} })).status).toBe(404);
    }
  });

  it('takes saves of one schema at once, each a distinct save (the fuzzer found a 500: two in one millisecond)', async () => {
    const { body: s } = await call('POST', '/api/v1/schemas', { name: 'busy', schema: productSchema });
    const saves = await Promise.all(
      Array.from({ length: 8 }, (_, i) => call('PUT', `/api/v1/schemas/${s.schema_id}`, { name: `busy ${i}`, schema: productSchema, service_properties: {} })),
    );
    expect(saves.map((r) => r.status)).toEqual(Array(8).fill(200));
    expect(new Set(saves.map((r) => Date.parse(r.body.updated_at))).size).toBe(8);
  });

  it('announces each schema as saved on dam.schemas.<group>.<id>, for the search read model', async () => {
    const seen = await collect(h.nc, DATA_SCHEMAS, `dam.schemas.${GROUP}.>`);
    try {
      const created = await call('POST', '/api/v1/schemas', { name: 'announced', schema: productSchema, service_properties: { sku: { searchable: true } } });
      const id = created.body.schema_id as number;
      const updated = await call('PUT', `/api/v1/schemas/${id}`, { name: 'announced', schema: productSchema, service_properties: { sku: { keyword: true } } });
      expect(updated.status).toBe(200);
      await waitFor(async () => seen.messages.filter((m) => m.subject === dataSchemaSubject(GROUP, id)).length === 2, { description: 'both announcements' });
      expect(seen.messages.filter((m) => m.subject === dataSchemaSubject(GROUP, id)).map((m) => m.payload)).toEqual([
        { id: expect.any(String), group_id: GROUP, schema_id: id, service_properties: { sku: { searchable: true } }, updated_at: created.body.updated_at },
        { id: expect.any(String), group_id: GROUP, schema_id: id, service_properties: { sku: { keyword: true } }, updated_at: updated.body.updated_at },
      ]);
    } finally {
      await seen.stop();
    }
  });

  it('announces, once, the schemas saved before announcements existed (migration 015)', async () => {
    const pool = createPool(await createDatabase('metadata_backfill'));
    try {
      const all = [...(await readMigrations(path.join(__dirname, '../src/migrations'))), { name: '002_outbox.sql', sql: OUTBOX_MIGRATION_SQL }].sort((a, b) =>
        a.name.localeCompare(b.name),
      );
      await migrate(
        pool,
        all.filter((m) => m.name < '015'),
      );
      await pool.query(`INSERT INTO asset_schemas (group_id, name, schema, service_properties) VALUES (4, 'old', '{}', '{"sku": {"searchable": true}}')`);
      await migrate(pool, all);
      const { rows } = await pool.query<{ subject: string; payload: unknown }>('SELECT subject, payload FROM outbox');
      expect(rows).toHaveLength(1);
      expect(rows[0]!.subject).toBe(dataSchemaSubject(4, 1));
      expect(dataSchemaSavedSchema.parse(rows[0]!.payload)).toMatchObject({ group_id: 4, schema_id: 1, service_properties: { sku: { searchable: true } } });
    } finally {
      await pool.end();
    }
  });
});
