/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are untyped JSON; the assertions check them */
import { createHash, randomUUID } from 'node:crypto';
import { ASSET_EVENTS, FILE_PROCESSED, type ConversionsCompleted, type JobReport } from '@dam/events';
import { originalKey } from '@dam/storage';
import { scaled, waitFor } from '@dam/testing';
import { failUnappliedReport } from '../src/use-cases/apply-job-report.use-case';
import { assetId, collect, finalReport, legacyFinalReport, publishReport, signedFetch, principal, startMetadata, type Harness } from './harness';

let h: Harness;
beforeAll(async () => {
  h = await startMetadata();
});
afterAll(async () => {
  await h.stop();
});

const admin = principal({ group_id: 4 });
const checksum = createHash('md5').update('png bytes').digest('hex');

async function createImage(): Promise<string> {
  const id = assetId();
  const res = await signedFetch(`${h.url}/internal/v1/assets`, admin, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      files: [{ id, name: 'p.png', size: 9, checksum, content_type: 'image/png', object_key: originalKey('4', id), metadata: {} }],
    }),
  });
  expect(res.status).toBe(201);
  return id;
}

const data = async (id: string) => (await (await signedFetch(`${h.url}/api/v1/assets/${id}/data`, admin)).json()) as any;

function made(id: string, overrides: Partial<ConversionsCompleted> = {}): ConversionsCompleted {
  return {
    id: randomUUID(),
    asset_id: id,
    group_id: '4',
    source_checksum: checksum,
    image: { width: 640, height: 480 },
    conversions: {
      thumb: { object_key: `conversions/4/${id}/${checksum}/thumb.webp`, content_type: 'image/webp', width: 200, height: 150, size: 1234 },
    },
    errors: {},
    ...overrides,
  };
}

const report = (id: string, overrides: Partial<ConversionsCompleted> = {}): Promise<JobReport> => finalReport(h, made(id, overrides));
const publish = (r: JobReport) => publishReport(h, r);

describe('conversion job results (dam.internal.jobs.reports)', () => {
  it('records conversions, sets OK and emits exactly one file-processed even when delivered twice', async () => {
    const id = await createImage();
    const events = await collect(h.nc, ASSET_EVENTS, 'assets.events.4.file-processed');
    const r = await report(id);
    publish(r);
    publish(r); // the same message twice
    // And a second final report (new message id) for the same job: the job has ended, nothing changes.
    publish({ ...r, id: randomUUID() });

    await waitFor(async () => (await data(id)).status === 'OK', { description: 'asset OK' });
    await waitFor(async () => (await h.pool.query('SELECT count(*)::int AS n FROM processed_messages')).rows[0].n >= 2);
    // The one file-processed goes through the outbox relay and NATS to the collector: waited for. Then time for a
    // wrong second one to take the same way (longer on a slower machine).
    await waitFor(() => events.messages.some((m) => m.payload.asset_id === id), { description: 'file-processed' });
    await new Promise((resolve) => setTimeout(resolve, scaled(1000)));
    await events.stop();
    const mine = events.messages.filter((m) => m.payload.asset_id === id);
    expect(mine).toHaveLength(1);
    const event = FILE_PROCESSED.schema.parse(mine[0]?.payload);
    expect(event.data.status).toBe('OK');
    expect(event.data.conversions).toEqual({ thumb: { width: 200, height: 150, size: 1234, public: false } });
    // Later than the file-saved of the same asset (version 1): conversions and OK each bumped it.
    expect(event.version).toBe(3);

    const body = await data(id);
    expect(body.metadata).toEqual({ width: 640, height: 480 });
    expect(body.conversions.thumb).toEqual({ width: 200, height: 150, size: 1234, public: false });
  });

  it('ignores a report about another checksum', async () => {
    const id = await createImage();
    const old = 'f'.repeat(32);
    const stale = await report(id, {
      source_checksum: old,
      conversions: { thumb: { object_key: `conversions/4/${id}/${old}/thumb.webp`, content_type: 'image/webp', width: 200, height: 150, size: 1234 } },
    });
    publish(stale);
    await waitFor(async () => (await h.pool.query('SELECT count(*)::int AS n FROM processed_messages WHERE id = $1', [stale.id])).rows[0].n === 1);
    const body = await data(id);
    expect(body.status).toBe('NOT_READY');
    expect(body.conversions).toEqual({});
  });

  it("rejects a report naming an object outside the asset (another group's original) and records nothing", async () => {
    const id = await createImage();
    const victim = `originals/3/${assetId()}`;
    const forged = await report(id, { conversions: { thumb: { object_key: victim, content_type: 'image/png', width: 1, height: 1, size: 1 } } });
    const sibling = await report(id, {
      conversions: { thumb: { object_key: `conversions/4/${assetId()}/${checksum}/thumb.webp`, content_type: 'image/webp', width: 1, height: 1, size: 1 } },
    });
    const dotted = await report(id, {
      conversions: {
        thumb: { object_key: `conversions/4/${id}/${checksum}/../../../originals/3/x`, content_type: 'image/webp', width: 1, height: 1, size: 1 },
      },
    });
    for (const r of [forged, sibling, dotted]) publish(r);
    // A good report afterwards proves the bad ones were consumed (in order) rather than still queued.
    const good = await report(id);
    publish(good);
    await waitFor(async () => (await data(id)).status === 'OK', { description: 'the good report applied' });
    const claimed = await h.pool.query('SELECT id FROM processed_messages WHERE id = ANY($1)', [[forged.id, sibling.id, dotted.id]]);
    expect(claimed.rowCount).toBe(0);
    expect((await data(id)).conversions).toEqual({ thumb: { width: 200, height: 150, size: 1234, public: false } });
    const stored = await h.pool.query(`SELECT conversions->'thumb'->>'object_key' AS key FROM assets WHERE id = $1`, [id]);
    expect(stored.rows[0].key).toBe(`conversions/4/${id}/${checksum}/thumb.webp`);
  });

  it("applies a previous release's wrapped report during a rolling upgrade, and refuses one whose ids name another asset", async () => {
    const id = await createImage();
    const other = await createImage();
    // The wrapped form with its own ids naming another asset of the group: nothing of it is kept, nothing claimed.
    const misnamed = await legacyFinalReport(h, made(id), { asset_id: other, job_id: await (async () => (await finalReport(h, made(other))).job_id)() });
    publish(misnamed);
    const wrapped = await legacyFinalReport(h, made(id));
    expect(wrapped.outputs).toBeUndefined();
    publish(wrapped);
    await waitFor(async () => (await data(id)).status === 'OK', { description: 'the wrapped report applied' });
    expect((await data(id)).conversions).toEqual({ thumb: { width: 200, height: 150, size: 1234, public: false } });
    expect((await h.pool.query('SELECT id FROM processed_messages WHERE id = $1', [misnamed.id])).rowCount).toBe(0);
    expect((await data(other)).status).toBe('NOT_READY');
  });

  it('opens no job for an image type conversion cannot decode: OK at once, and nothing to process it into', async () => {
    const id = assetId();
    const res = await signedFetch(`${h.url}/internal/v1/assets`, admin, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        files: [{ id, name: 'favicon.ico', size: 9, checksum, content_type: 'image/x-icon', object_key: originalKey('4', id), metadata: {} }],
      }),
    });
    expect(res.status).toBe(201);
    expect((await data(id)).status).toBe('OK');
    expect((await h.pool.query('SELECT id FROM jobs WHERE $1 = ANY(asset_ids)', [id])).rowCount).toBe(0);
    const processed = await signedFetch(`${h.url}/api/v1/assets/${id}/process`, admin, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ keys: ['thumb'] }),
    });
    expect(processed.status).toBe(400);
  });

  it('a report with only errors sets ERROR with errors and emits file-processed with status ERROR', async () => {
    const id = await createImage();
    const events = await collect(h.nc, ASSET_EVENTS, 'assets.events.4.file-processed');
    publish(await report(id, { conversions: {}, image: null, errors: { thumb: 'unsupported image' } }));
    await waitFor(async () => (await data(id)).status === 'ERROR', { description: 'asset ERROR' });
    const body = await data(id);
    expect(body.errors).toEqual({ thumb: 'unsupported image' });
    await waitFor(() => events.messages.some((m) => m.payload.asset_id === id));
    await events.stop();
    const event = events.messages.find((m) => m.payload.asset_id === id)?.payload;
    expect(event.data.status).toBe('ERROR');
    expect(event.data.errors).toEqual({ thumb: 'unsupported image' });
  });

  it('a dead-lettered report ends the asset in ERROR (never stuck NOT_READY), once', async () => {
    const id = await createImage();
    const r = await report(id);
    expect(await failUnappliedReport(h.transactions, r, 'conversion')).toBe(true);
    expect(await failUnappliedReport(h.transactions, r, 'conversion')).toBe(false);
    const body = await data(id);
    expect(body.status).toBe('ERROR');
    expect(body.errors.conversions).toMatch(/could not be recorded/);
    const outbox = await h.pool.query(`SELECT payload FROM outbox WHERE subject = 'assets.events.4.file-processed' AND payload->>'asset_id' = $1`, [id]);
    expect(outbox.rows.map((row) => row.payload.data.status)).toEqual(['ERROR']);
  });

  it('downloads a single-file conversion with its own size and etag', async () => {
    const id = await createImage();
    const bytes = Buffer.from('webp-bytes-here');
    const key = `conversions/4/${id}/${checksum}/thumb.webp`;
    await h.storage.putBuffer(key, bytes, { contentType: 'image/webp' });
    publish(await report(id, { conversions: { thumb: { object_key: key, content_type: 'image/webp', width: 2, height: 2, size: bytes.length } } }));
    await waitFor(async () => (await data(id)).status === 'OK');
    const res = await signedFetch(`${h.url}/api/v1/assets/${id}/content/thumb/download`, admin);
    expect(res.status).toBe(200);
    expect(Buffer.from(await res.arrayBuffer())).toEqual(bytes);
    expect(res.headers.get('content-type')).toBe('image/webp');
    expect(res.headers.get('etag')).toBe(`"${createHash('md5').update(bytes).digest('hex')}"`);
    expect(res.headers.get('content-disposition')).toBe('attachment; filename="p_thumb.webp"');
  });
});
