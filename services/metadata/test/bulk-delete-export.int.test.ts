/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are untyped JSON; the assertions check them */
import { createHash } from 'node:crypto';
import { originalKey } from '@dam/storage';
import { scaled, waitFor } from '@dam/testing';
import { assetId, principal, signedFetch, startMetadata, type Harness } from './harness';

/**
 * Delete - Bulk's data export (spec endpoint 7: "Each deleted asset raises a deletion callback (and a database export
 * where configured)"): with `bulk_delete.export` the job keeps the deleted assets' records as JSON lines, written
 * batch by batch, and `GET /api/v1/jobs/{job_id}/export` streams them to whoever may see the job.
 */
let h: Harness;
beforeAll(async () => {
  h = await startMetadata();
});
afterAll(async () => {
  await h?.stop();
});

const GROUP = 51;
const admin = principal({ group_id: GROUP, user_id: 1 });
const RANGE = { start_time: '2026-05-01T00:00:00Z', end_time: '2026-05-08T00:00:00Z' };

async function call(method: string, path: string, body?: unknown, p = admin): Promise<{ status: number; body: any; headers: Headers }> {
  const res = await signedFetch(`${h.url}${path}`, p, {
    method,
    ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: res.headers.get('content-type')?.includes('application/json') && text ? JSON.parse(text) : text, headers: res.headers };
}

/** `n` text assets of the group uploaded inside RANGE (their originals in the bucket), created in one call. */
async function assets(group: number, n: number, p = admin): Promise<string[]> {
  const files = await Promise.all(
    Array.from({ length: n }, async (_, i) => {
      const id = assetId();
      const bytes = Buffer.from(`record ${i} of ${id}`);
      await h.storage.putBuffer(originalKey(String(group), id), bytes, { contentType: 'text/plain' });
      const checksum = createHash('md5').update(bytes).digest('hex');
      return { id, name: `f${i}.txt`, size: bytes.length, checksum, content_type: 'text/plain', object_key: originalKey(String(group), id), metadata: {} };
    }),
  );
  const res = await signedFetch(
    `${h.url}/internal/v1/assets`,
    { ...p, group_id: group },
    { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ files }) },
  );
  expect(res.status).toBe(201);
  const ids = files.map((f) => f.id);
  await h.pool.query(
    `UPDATE assets SET upload_time = '2026-05-03T00:00:00Z'::timestamptz + (array_position($1::text[], id) * interval '1 second') WHERE id = ANY($1)`,
    [ids],
  );
  return ids;
}

async function bulkDelete(p = admin): Promise<any> {
  const accepted = await call('POST', '/api/v1/assets/bulk/delete', RANGE, p);
  expect(accepted.status).toBe(200);
  const jobId = accepted.body.job_id;
  return waitFor(
    async () => {
      const job = await call('GET', `/api/v1/jobs/${jobId}`, undefined, p);
      return job.body.status === 'COMPLETED' ? job.body : undefined;
    },
    { description: `bulk delete job ${jobId}`, timeoutMs: scaled(30_000) },
  );
}

const lines = (text: string): any[] =>
  text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l));

describe('Delete - Bulk data export (bulk_delete.export)', () => {
  it('keeps the records of the deleted assets as JSON lines with the job, equal to Get Data before the delete', async () => {
    h.settings.set(String(GROUP), { bulk_delete: { export: true } });
    const ids = await assets(GROUP, 4);
    const before = await Promise.all(ids.map(async (id) => (await call('GET', `/api/v1/assets/${id}/data`)).body));
    const job = await bulkDelete();
    expect(job.steps.map((s: any) => [s.name, s.status])).toEqual([
      ['delete', 'COMPLETED'],
      ['export', 'COMPLETED'],
    ]);
    expect(job.export_url).toBe(`/api/v1/jobs/${job.job_id}/export`);
    expect((await call('GET', `/api/v1/jobs?type=bulk_delete`)).body.items.find((j: any) => j.job_id === job.job_id)?.export_url).toBe(job.export_url);

    const exported = await call('GET', job.export_url);
    expect(exported.status).toBe(200);
    expect(exported.headers.get('content-type')).toBe('application/x-ndjson');
    expect(exported.headers.get('content-disposition')).toBe(`attachment; filename="bulk-delete-${job.job_id}.jsonl"`);
    // In the order the job trashed them (the oldest first), each as Get Data answered before.
    expect(lines(exported.body)).toEqual(job.asset_ids.map((id: string) => before[ids.indexOf(id)]));
    expect([...job.asset_ids].sort()).toEqual([...ids].sort());
    for (const id of ids) expect((await call('GET', `/api/v1/assets/${id}/data`)).body.error.code).toBe('ASSET_IN_TRASH');
    // Kept in metadata's own prefix of the bucket, never handed out as an object-store URL.
    expect(await h.storage.listKeys(`exports/${GROUP}/bulk-delete-${job.job_id}/`)).toHaveLength(1);
  });

  it('writes a large bulk delete batch by batch (one part per 50 assets) and streams the parts back as one file', async () => {
    const group = GROUP + 1;
    const boss = principal({ group_id: group, user_id: 1 });
    h.settings.set(String(group), { bulk_delete: { export: true, max_assets: 1000 } });
    const ids = await assets(group, 130, boss);
    const job = await bulkDelete(boss);
    const parts = await h.storage.listKeys(`exports/${group}/bulk-delete-${job.job_id}/`);
    expect(parts).toHaveLength(3);
    const sizes = await Promise.all(parts.sort().map(async (k) => lines((await h.storage.getBuffer(k)).toString()).length));
    expect(sizes).toEqual([50, 50, 30]);
    const exported = lines((await call('GET', job.export_url, undefined, boss)).body);
    expect(exported.map((r) => r.id)).toEqual(job.asset_ids);
    expect(new Set(exported.map((r) => r.id))).toEqual(new Set(ids));
  });

  it('keeps nothing where not configured (no export_url, 404 EXPORT_NOT_FOUND), and shows an export only to who may see the job', async () => {
    const group = GROUP + 2;
    const boss = principal({ group_id: group, user_id: 1 });
    await assets(group, 2, boss);
    const job = await bulkDelete(boss);
    expect(job.steps.map((s: any) => s.name)).toEqual(['delete']);
    expect(job).not.toHaveProperty('export_url');
    expect((await call('GET', `/api/v1/jobs/${job.job_id}/export`, undefined, boss)).body.error.code).toBe('EXPORT_NOT_FOUND');
    expect(await h.storage.listKeys(`exports/${group}/`)).toEqual([]);

    // Another group's caller learns nothing of the first test's export.
    const [first] = (await call('GET', '/api/v1/jobs?type=bulk_delete')).body.items;
    const stranger = await call('GET', `/api/v1/jobs/${first.job_id}/export`, undefined, boss);
    expect({ status: stranger.status, code: stranger.body.error.code }).toEqual({ status: 404, code: 'JOB_NOT_FOUND' });
  });

  it('answers 409 EXPORT_NOT_READY while the job still runs', async () => {
    const group = GROUP + 3;
    const boss = principal({ group_id: group, user_id: 1 });
    // A job another replica runs (its lease held for an hour).
    const { rows } = await h.pool.query<{ id: string }>(
      `INSERT INTO jobs (group_id, type, status, steps, created_by, lease_owner, lease_until)
       VALUES ($1, 'bulk_delete', 'IN_PROGRESS', '[{"name":"delete","status":"IN_PROGRESS","started_at":null,"finished_at":null},{"name":"export","status":"QUEUED","started_at":null,"finished_at":null}]',
               1, 'elsewhere', now() + interval '1 hour')
       RETURNING id`,
      [group],
    );
    const res = await call('GET', `/api/v1/jobs/${rows[0]?.id}/export`, undefined, boss);
    expect({ status: res.status, code: res.body.error.code }).toEqual({ status: 409, code: 'EXPORT_NOT_READY' });
  });
});
