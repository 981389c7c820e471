/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are untyped JSON; the assertions check them */
import { createHash } from 'node:crypto';
import { ASSET_EVENTS, FILE_DELETED } from '@dam/events';
import { conversionKey, originalKey } from '@dam/storage';
import { makePng, scaled, waitFor } from '@dam/testing';
import { assetId, collect, finalReport, principal, publishReport, signedFetch, startMetadata, type Harness } from './harness';

/**
 * The deletion callback tells the outcome (spec: deletion payload `status` OK | MAYBE | ERROR, `errors` mapping a
 * failed key to its message): `file-deleted` goes out once the objects its Delete queued are removed, given up
 * (ERROR), or kept because the asset came back (MAYBE), in the order of the asset's Deletes.
 */
let h: Harness;
let events: Awaited<ReturnType<typeof collect>>;
/** Assets whose objects the store refuses to remove (as S3 would with AccessDenied). */
const refused = new Set<string>();
const MAX_ATTEMPTS = 4;
beforeAll(async () => {
  h = await startMetadata({
    deletions: {
      retry: { maxAttempts: MAX_ATTEMPTS, backoffMs: 300, maxBackoffMs: 1_000 },
      failing: (key) => ([...refused].some((id) => key.includes(id)) ? Object.assign(new Error('Access Denied.'), { code: 'AccessDenied' }) : undefined),
    },
  });
  events = await collect(h.nc, ASSET_EVENTS, 'assets.events.*.*');
});
afterAll(async () => {
  await events?.stop();
  await h?.stop();
});

const GROUP = 41;
const admin = principal({ group_id: GROUP, user_id: 1 });

async function call(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await signedFetch(`${h.url}${path}`, admin, {
    method,
    ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text && res.headers.get('content-type')?.includes('json') ? JSON.parse(text) : text };
}

/** An image with its original and a stored `thumb`, OK. */
async function image(): Promise<{ id: string; thumbKey: string }> {
  const id = assetId();
  const bytes = Buffer.from(`original bytes of ${id}`);
  const checksum = createHash('md5').update(bytes).digest('hex');
  await h.storage.putBuffer(originalKey(String(GROUP), id), bytes, { contentType: 'image/png' });
  const res = await signedFetch(`${h.url}/internal/v1/assets`, admin, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      files: [{ id, name: 'f.png', size: bytes.length, checksum, content_type: 'image/png', object_key: originalKey(String(GROUP), id), metadata: {} }],
    }),
  });
  expect(res.status).toBe(201);
  const thumbKey = conversionKey(String(GROUP), id, checksum, 'thumb', 'webp');
  await h.storage.putBuffer(thumbKey, Buffer.from('thumb'), { contentType: 'image/webp' });
  const made = { id: 'r', asset_id: id, group_id: String(GROUP), source_checksum: checksum, image: { width: 2, height: 2 }, errors: {} };
  publishReport(
    h,
    await finalReport(h, { ...made, conversions: { thumb: { object_key: thumbKey, content_type: 'image/webp', width: 2, height: 2, size: 5 } } }),
  );
  await waitFor(async () => (await call('GET', `/api/v1/assets/${id}/data`)).body.status === 'OK', { description: 'image OK' });
  return { id, thumbKey };
}

const deletionEvents = (id: string) => events.messages.filter((m) => m.payload.asset_id === id && /file-(un)?deleted$/.test(m.subject)).map((m) => m.payload);
/** Failed removal attempts of the asset's queued objects so far. */
const attempts = async (id: string): Promise<number> =>
  Number(
    (await h.pool.query<{ n: number }>(`SELECT coalesce(max(attempts), 0) AS n FROM object_deletions WHERE key LIKE '%' || $1 || '%'`, [id])).rows[0]?.n ?? 0,
  );

describe('deletion callbacks (spec: deletion payload status OK | MAYBE | ERROR)', () => {
  it('sends file-deleted only once the removal is done: none while the store refuses it, OK when it succeeds', async () => {
    const { id, thumbKey } = await image();
    refused.add(id);
    expect(await call('POST', `/api/v1/assets/${id}/delete`, { keys: ['thumb'] })).toMatchObject({ status: 200, body: { status: 'OK' } });
    await waitFor(async () => (await attempts(id)) >= 1, { description: 'a refused removal' });
    // Pending: the record changed (Get Data lists no thumb), the callback waits for its outcome.
    expect((await call('GET', `/api/v1/assets/${id}/data`)).body.conversions).toEqual({});
    await h.relay.drainOnce();
    expect(deletionEvents(id)).toEqual([]);
    expect(await h.storage.stat(thumbKey)).not.toBeNull();

    refused.delete(id);
    await waitFor(() => deletionEvents(id).length === 1, { description: 'file-deleted', timeoutMs: scaled(10_000) });
    expect(await h.storage.stat(thumbKey)).toBeNull();
    const [event] = deletionEvents(id);
    expect(FILE_DELETED.schema.parse({ ...event, type: 'file-deleted' })).toBeTruthy();
    expect(event.data).toEqual({ id, event: 'file-deleted', keys: ['thumb'], status: 'OK', message: 'Deleted: thumb' });
  });

  it('reports ERROR with the failed key and its reason when the removal is given up; the object stays queued', async () => {
    const { id, thumbKey } = await image();
    refused.add(id);
    expect((await call('POST', `/api/v1/assets/${id}/delete`, { keys: ['thumb', 'nope'] })).status).toBe(200);
    await waitFor(() => deletionEvents(id).length === 1, { description: 'file-deleted ERROR', timeoutMs: scaled(20_000) });
    const [event] = deletionEvents(id);
    expect(FILE_DELETED.schema.parse({ ...event, type: 'file-deleted' })).toBeTruthy();
    expect(event.data).toEqual({
      id,
      event: 'file-deleted',
      keys: ['thumb', 'nope'],
      status: 'ERROR',
      message: 'Deleted: thumb; the stored files of thumb could not be removed',
      errors: { thumb: `not removed after ${MAX_ATTEMPTS} attempts (still retried): AccessDenied: Access Denied.` },
    });
    expect(await attempts(id)).toBeGreaterThanOrEqual(MAX_ATTEMPTS);
    expect(await h.storage.stat(thumbKey)).not.toBeNull();
    // Nothing is orphaned: the queue goes on, and once the store lets it the object goes (no second callback).
    refused.delete(id);
    await waitFor(async () => (await h.storage.stat(thumbKey)) === null, { description: 'removed later', timeoutMs: scaled(10_000) });
    await h.relay.drainOnce();
    expect(deletionEvents(id)).toHaveLength(1);
  });

  it("keeps one asset's callbacks in the order of its Deletes: a later Delete with nothing to remove waits behind a pending one", async () => {
    const { id } = await image();
    refused.add(id);
    expect((await call('POST', `/api/v1/assets/${id}/delete`, { keys: ['thumb'] })).status).toBe(200);
    expect((await call('POST', `/api/v1/assets/${id}/delete`, { keys: ['auto_tagging'] })).status).toBe(200);
    await waitFor(async () => (await attempts(id)) >= 1, { description: 'a refused removal' });
    await h.relay.drainOnce();
    expect(deletionEvents(id)).toEqual([]);
    refused.delete(id);
    await waitFor(() => deletionEvents(id).length === 2, { description: 'both file-deleted', timeoutMs: scaled(10_000) });
    expect(deletionEvents(id).map((e) => [e.data.keys, e.data.status])).toEqual([
      [['thumb'], 'OK'],
      [['auto_tagging'], 'OK'],
    ]);
  });

  it('sends a settled file-deleted even while over a thousand older ones wait for removals (an outage), and counts a key no longer queued as removed', async () => {
    const stuck = Array.from({ length: 1001 }, () => assetId());
    const ready = assetId();
    const entry = (id: string) => {
      const eventId = `held-${id}`;
      const payload = {
        id: eventId,
        type: 'file-deleted',
        time: new Date().toISOString(),
        group_id: String(GROUP),
        asset_id: id,
        version: 2,
        data: { id, event: 'file-deleted', keys: ['original'], status: 'OK', message: 'The asset was moved to the trash' },
      };
      return JSON.stringify({ id: eventId, subject: `assets.events.${GROUP}.file-deleted`, payload });
    };
    try {
      // Held first, each waiting for a removal still queued (not due for a day); then one whose key is no longer
      // queued: its removal went, though no drain marked it (a Delete that found the key queued while a drain removed it).
      await h.pool.query(`INSERT INTO object_deletions (key, not_before) SELECT 'outage/' || a || '/', now() + interval '1 day' FROM unnest($1::text[]) a`, [
        stuck,
      ]);
      await h.pool.query(
        `WITH o AS (INSERT INTO deletion_outcomes (group_id, asset_id, entry) SELECT $1, a, $3::jsonb FROM unnest($2::text[]) a RETURNING id, asset_id)
         INSERT INTO deletion_outcome_objects (outcome_id, key, label) SELECT id, 'outage/' || asset_id || '/', 'original' FROM o`,
        [GROUP, stuck, entry(stuck[0] ?? '')],
      );
      const { rows } = await h.pool.query<{ id: string }>(`INSERT INTO deletion_outcomes (group_id, asset_id, entry) VALUES ($1, $2, $3) RETURNING id`, [
        GROUP,
        ready,
        entry(ready),
      ]);
      await h.pool.query(`INSERT INTO deletion_outcome_objects (outcome_id, key, label) VALUES ($1, $2, 'original')`, [rows[0]?.id, `gone/${ready}/`]);
      await waitFor(() => deletionEvents(ready).length === 1, { description: 'the settled one sent', timeoutMs: scaled(10_000) });
      expect(deletionEvents(ready)[0].data.status).toBe('OK');
    } finally {
      await h.pool.query(`DELETE FROM deletion_outcomes WHERE asset_id = ANY($1)`, [stuck]);
      await h.pool.query(`DELETE FROM object_deletions WHERE starts_with(key, 'outage/')`);
    }
  });

  it('reports MAYBE, before the new file-processed, when a deleted conversion is added again before its file was removed', async () => {
    const { id } = await image();
    const add = async () => {
      const form = new FormData();
      form.append('file', new Blob([makePng(3, 2)]), 'poster.png');
      return (await signedFetch(`${h.url}/api/v1/assets/${id}/content/poster1`, admin, { method: 'POST', body: form })).status;
    };
    expect(await add()).toBe(200);
    refused.add(id);
    expect((await signedFetch(`${h.url}/api/v1/assets/${id}/content/poster1`, admin, { method: 'DELETE' })).status).toBe(200);
    await waitFor(async () => (await attempts(id)) >= 1, { description: 'a refused removal' });
    expect(await add()).toBe(200);
    refused.delete(id);
    const last = () =>
      events.messages
        .filter((m) => m.payload.asset_id === id && /file-(deleted|processed)$/.test(m.subject))
        .slice(-2)
        .map((m) => m.payload);
    await waitFor(() => last()[0]?.type === 'file-deleted', { description: 'file-deleted then file-processed' });
    const [deleted, processed] = last();
    expect(deleted.data).toEqual({
      id,
      event: 'file-deleted',
      keys: ['poster1'],
      status: 'MAYBE',
      message: 'Deleted: poster1; the stored files of poster1 were kept: the conversion was added again before they were removed',
    });
    expect(processed.type).toBe('file-processed');
    expect(Object.keys(processed.data.conversions)).toContain('poster1');
  });

  it('reports MAYBE, before file-undeleted, when the asset is restored before its files were removed', async () => {
    const { id, thumbKey } = await image();
    refused.add(id);
    expect((await call('POST', `/api/v1/assets/${id}/delete`, { keys: ['original'] })).status).toBe(200);
    await waitFor(async () => (await attempts(id)) >= 1, { description: 'a refused removal' });
    expect((await call('POST', `/api/v1/assets/trash/${id}/undelete`, { keys: ['original'] })).status).toBe(200);
    await waitFor(() => deletionEvents(id).length === 2, { description: 'file-deleted and file-undeleted' });
    const [deleted, undeleted] = deletionEvents(id);
    expect(deleted.data).toEqual({
      id,
      event: 'file-deleted',
      keys: ['original'],
      status: 'MAYBE',
      message:
        'The asset was moved to the trash; its conversions were deleted; the stored files of original were kept: the asset was restored before they were removed',
    });
    expect(undeleted.data).toMatchObject({ event: 'file-undeleted', status: 'OK' });
    // The queued removal was cancelled with it: the old files stay for the conversions made again.
    refused.delete(id);
    expect(await attempts(id)).toBe(0);
    expect(await h.storage.stat(thumbKey)).not.toBeNull();
  });
});
