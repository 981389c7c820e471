/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are untyped JSON; the assertions check them */
import sharp from 'sharp';
import { FILE_DELETED } from '@dam/events';
import { waitFor } from '@dam/testing';
import { watchAssetEvents } from './events';
import { useSuite } from './suite';

/**
 * The deletion callback's outcome and Delete - Bulk's data export, through the gateway (issue 32's loose ends of the
 * specification): `file-deleted` says ERROR with the failed key when the object store refuses the removal for good,
 * MAYBE when the asset is restored before its files went, OK otherwise; a bulk delete of a group that asks for it
 * keeps the deleted records as JSON lines behind `export_url`.
 */
const MAX_ATTEMPTS = 4;
const e2e = useSuite(
  {
    metadata: {
      OBJECT_DELETIONS_INTERVAL_MS: '200',
      OBJECT_DELETION_MAX_ATTEMPTS: String(MAX_ATTEMPTS),
      OBJECT_DELETION_BACKOFF_MS: '500',
      LOCAL_JOBS_INTERVAL_MS: '200',
    },
  },
  { services: ['upload', 'conversion'], proxies: { s3: true } },
);
const { call, upload, settled } = e2e.api;
let events: Awaited<ReturnType<typeof watchAssetEvents>>;
beforeAll(async () => {
  events = await watchAssetEvents(e2e.suite.natsUrl, e2e.suite.adminSeed);
});
afterAll(async () => {
  await events?.close();
});

const png = (color: string) =>
  sharp({ create: { width: 40, height: 30, channels: 3, background: color } })
    .png()
    .toBuffer();
const deletionEvents = (id: string) => events.seen.filter((e) => e.asset_id === id && /^file-(un)?deleted$/.test(e.type)).map((e) => e.envelope as any);

describe('deletion callbacks and the bulk delete export (issue 32)', () => {
  it("keeps a bulk delete's records as JSON lines behind export_url, where the group asks for it", async () => {
    expect((await call('PATCH', '/api/v1/settings', { bulk_delete: { export: true } })).body.bulk_delete).toMatchObject({ export: true });
    const start = new Date(Date.now() - 1000).toISOString();
    const ids = [await upload(await png('#aa3300'), 'one.png'), await upload(await png('#00aa33'), 'two.png')];
    const before = new Map<string, unknown>();
    for (const id of ids) before.set(id, await settled(id));
    const accepted = await call('POST', '/api/v1/assets/bulk/delete', { start_time: start, end_time: new Date(Date.now() + 1000).toISOString() });
    expect(accepted).toMatchObject({ status: 200, body: { status: 'QUEUED', job_id: expect.any(Number) } });
    const job = await waitFor(
      async () => {
        const j = await call('GET', `/api/v1/jobs/${accepted.body.job_id}`);
        return j.body.status === 'COMPLETED' ? j.body : undefined;
      },
      { timeoutMs: 30_000, description: 'the bulk delete job' },
    );
    expect(job.export_url).toBe(`/api/v1/jobs/${job.job_id}/export`);

    const res = await fetch(`${e2e.suite.base}${job.export_url}`, { headers: { authorization: `Bearer ${e2e.jwt}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/x-ndjson');
    const lines = (await res.text())
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l));
    expect(lines).toEqual(job.asset_ids.map((id: string) => before.get(id)));
    expect([...job.asset_ids].sort()).toEqual([...ids].sort());
    // Each deleted asset also raised its deletion callback.
    await waitFor(() => ids.every((id) => deletionEvents(id).some((e) => e.data.status === 'OK')), {
      timeoutMs: 30_000,
      description: 'file-deleted per asset',
    });
    // Without a token the export is as closed as the job.
    expect((await fetch(`${e2e.suite.base}${job.export_url}`)).status).toBe(401);
  });

  it('says MAYBE before file-undeleted when the files were kept, and ERROR with the key when the store refuses their removal', async () => {
    const restored = await upload(await png('#3300aa'), 'restored.png');
    const refused = await upload(await png('#aaaa00'), 'refused.png');
    for (const id of [restored, refused]) expect((await settled(id)).status).toBe('OK');
    const s3 = e2e.suite.proxies.s3;
    if (!s3) throw new Error('the suite runs without its S3 proxy');
    await s3.down();
    try {
      // Trashed and restored while the store cannot remove anything: the files are kept (MAYBE), said before file-undeleted.
      expect((await call('POST', `/api/v1/assets/${restored}/delete`, { keys: ['original'] })).status).toBe(200);
      expect((await call('POST', `/api/v1/assets/trash/${restored}/undelete`, { keys: ['original'] })).status).toBe(200);
      await waitFor(() => deletionEvents(restored).length === 2, { timeoutMs: 30_000, description: 'file-deleted and file-undeleted' });
      const [deleted, undeleted] = deletionEvents(restored);
      expect(FILE_DELETED.schema.parse(deleted)).toBeTruthy();
      expect(deleted.data).toMatchObject({
        event: 'file-deleted',
        keys: ['original'],
        status: 'MAYBE',
        message: expect.stringMatching(/kept: the asset was restored/),
      });
      expect(undeleted.data).toMatchObject({ event: 'file-undeleted', status: 'OK' });

      // Trashed while the store refuses: nothing is said until the queue gives up, then ERROR naming the key.
      expect((await call('POST', `/api/v1/assets/${refused}/delete`, { keys: ['original'] })).status).toBe(200);
      await waitFor(() => deletionEvents(refused).length === 1, { timeoutMs: 60_000, description: 'file-deleted ERROR' });
      const [failed] = deletionEvents(refused);
      expect(FILE_DELETED.schema.parse(failed)).toBeTruthy();
      expect(failed.data).toMatchObject({ id: refused, event: 'file-deleted', keys: ['original'], status: 'ERROR' });
      expect(Object.keys(failed.data.errors)).toEqual(['original']);
      expect(failed.data.errors.original).toMatch(new RegExp(`^not removed after ${MAX_ATTEMPTS} attempts \\(still retried\\): `));
    } finally {
      await s3.pass();
    }
    // The removal goes on after the callback said ERROR; no second callback follows.
    expect((await call('GET', `/api/v1/assets/${refused}/data`)).body.error.code).toBe('ASSET_IN_TRASH');
    expect(deletionEvents(refused)).toHaveLength(1);
  });
});
