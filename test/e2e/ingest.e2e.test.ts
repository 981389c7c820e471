/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are untyped JSON; the assertions check them */
import { createServer, type Server } from 'node:http';
import { createHash } from 'node:crypto';
import { createBucket, scaled, testMinioClient, waitFor } from '@dam/testing';
import { watchAssetEvents } from './events';
import { ADMIN, loginResult, useSuite } from './suite';

let source: Server;
let sourceUrl: string;
let otherBucket: string;
let events: Awaited<ReturnType<typeof watchAssetEvents>>;
const PAYLOAD = Buffer.from('%PDF-1.4\n' + 'ingested bytes '.repeat(500));

beforeAll(async () => {
  // The "external website": plain http on loopback, reachable only because the operator allowed 127.0.0.1.
  source = createServer((req, res) => {
    if (req.url === '/file.pdf') {
      res.writeHead(200, { 'content-type': 'application/pdf', 'content-length': PAYLOAD.length });
      res.end(PAYLOAD);
    } else if (req.url === '/to-private') {
      res.writeHead(302, { location: 'http://10.0.0.1/secret' });
      res.end();
    } else {
      res.writeHead(404);
      res.end('missing');
    }
  });
  await new Promise<void>((resolve) => source.listen(0, '127.0.0.1', resolve));
  const address = source.address();
  sourceUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  otherBucket = await createBucket('e2e-ingest-src');
  await testMinioClient().putObject(otherBucket, 'folder/report.txt', Buffer.from('from another bucket'));
});

// Started after the hook above, on its bucket. The source answers from this process: its answer must not be taken
// for a timeout on a slower machine.
const e2e = useSuite(() => ({
  upload: { INGEST_ALLOW_HOSTS: '127.0.0.1', INGEST_S3_BUCKETS: otherBucket, INGEST_CONNECT_TIMEOUT_MS: String(scaled(3000)) },
}));

beforeAll(async () => {
  events = await watchAssetEvents(e2e.suite.natsUrl, e2e.suite.adminSeed);
});
e2e.beforeStop(() => events?.close());
afterAll(async () => {
  await new Promise((resolve) => source?.close(resolve));
});

async function ingest(body: unknown): Promise<{ status: number; body: { id: string; status: string; message: string } & Record<string, unknown> }> {
  const res = await fetch(`${e2e.suite.upload}/api/v1/assets/new/content/original/external`, {
    method: 'POST',
    headers: { authorization: `Bearer ${e2e.jwt}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as never };
}

const data = async (id: string) =>
  (await (await fetch(`${e2e.suite.base}/api/v1/assets/${id}/data`, { headers: { authorization: `Bearer ${e2e.jwt}` } })).json()) as Record<string, any>;
const settled = (id: string) =>
  waitFor(async () => ((await data(id)).status === 'NOT_READY' ? undefined : data(id)), {
    timeoutMs: 30_000,
    intervalMs: 200,
    description: `asset ${id} settled`,
  });

describe('Ingest from URI (endpoint 3)', () => {
  it('downloads from an allowed host as a job and follows the upload states to OK', async () => {
    const res = await ingest({ name: 'report.pdf', key: `${sourceUrl}/file.pdf` });
    expect(res).toMatchObject({ status: 202, body: { id: expect.stringMatching(/^[A-Za-z0-9]{32}$/), status: 'QUEUED', message: expect.any(String) } });
    const asset = await settled(res.body.id);
    expect(asset).toMatchObject({
      status: 'OK',
      name: 'report.pdf',
      size: PAYLOAD.length,
      checksum: createHash('md5').update(PAYLOAD).digest('hex'),
      content_type: 'application/pdf',
    });
    const download = await fetch(`${e2e.suite.base}/api/v1/assets/${res.body.id}/content/original/download`, {
      headers: { authorization: `Bearer ${e2e.jwt}` },
    });
    expect(Buffer.from(await download.arrayBuffer())).toEqual(PAYLOAD);
    const jobs = (await (await fetch(`${e2e.suite.base}/api/v1/jobs?type=ingest`, { headers: { authorization: `Bearer ${e2e.jwt}` } })).json()) as {
      items: any[];
    };
    expect(jobs.items.find((j) => j.asset_ids.includes(res.body.id))).toMatchObject({
      status: 'COMPLETED',
      steps: [{ name: 'download', status: 'COMPLETED' }],
    });
    await waitFor(() => events.seen.some((e) => e.asset_id === res.body.id && e.type === 'file-saved'), { description: 'file-saved' });
  });

  it('ends ERROR with the reason for a 404, and for a redirect to a private address', async () => {
    for (const [path, why] of [
      ['/nothing-here', /404/],
      ['/to-private', /refused.*10\.0\.0\.1|private/],
    ] as const) {
      const res = await ingest({ name: 'x.bin', key: `${sourceUrl}${path}` });
      expect(res.status).toBe(202);
      const asset = await settled(res.body.id);
      expect({ path, status: asset.status }).toEqual({ path, status: 'ERROR' });
      expect(asset.errors.original).toMatch(why);
    }
  });

  it('refuses loopback and private targets that are not allowed (decimal, hex and octal spellings too), at once, with status ERROR', async () => {
    for (const key of [
      'http://localhost:1/x',
      'https://127.0.0.2/x',
      'https://[::1]/x',
      'https://2130706434/x',
      'https://0x7f.0.0.2/x',
      'https://017700000002/x',
      'https://169.254.169.254/latest/meta-data',
      'ftp://example.com/x',
    ]) {
      const res = await ingest({ name: 'x', key });
      expect({ key, status: res.status, state: res.body.status }).toEqual({ key, status: 200, state: 'ERROR' });
      expect(res.body.message).toMatch(/refused/);
      expect(await data(res.body.id)).toMatchObject({ status: 'ERROR', errors: { original: res.body.message } });
    }
  });

  it('reads s3:// from an allowed second bucket, never from the asset bucket', async () => {
    const ok = await ingest({ name: 'report.txt', key: `s3://${otherBucket}/folder/report.txt` });
    expect(ok.status).toBe(202);
    expect(await settled(ok.body.id)).toMatchObject({ status: 'OK', size: 'from another bucket'.length });
    const own = await ingest({ name: 'steal', key: `s3://${e2e.suite.bucket}/originals/1/x` });
    expect(own).toMatchObject({ status: 200, body: { status: 'ERROR', message: expect.stringMatching(/own/) } });
    const unknown = await ingest({ name: 'x', key: 's3://not-listed-bucket/x' });
    expect(unknown.body).toMatchObject({ status: 'ERROR', message: expect.stringMatching(/INGEST_S3_BUCKETS/) });
  });

  it("tells the user at their next login that their ingest failed, once (Login's notifications, issue 32)", async () => {
    const notifications = async () => (await loginResult(e2e.suite.base, ADMIN.email, ADMIN.password)).notifications;
    // Whatever earlier tests left (their failed ingests) is seen now.
    await notifications();
    const res = await ingest({ name: 'missing.pdf', key: `${sourceUrl}/nothing-here` });
    expect(res.status).toBe(202);
    expect((await settled(res.body.id)).status).toBe('ERROR');
    const jobs = (await (await fetch(`${e2e.suite.base}/api/v1/jobs?type=ingest`, { headers: { authorization: `Bearer ${e2e.jwt}` } })).json()) as {
      items: any[];
    };
    const job = jobs.items.find((j) => j.asset_ids.includes(res.body.id));
    expect(job).toMatchObject({ status: 'ERROR' });
    // The notice travels metadata's outbox → NATS → auth: logins until it arrives, each showing what came since the last.
    const shown: string[] = [];
    await waitFor(async () => (shown.push(...(await notifications())), shown.some((m) => m.startsWith(`Job ${job.job_id} `))), {
      description: 'the failed ingest among the notifications',
    });
    expect(shown.filter((m) => m.startsWith(`Job ${job.job_id} `))).toEqual([`Job ${job.job_id} (ingest of missing.pdf) failed: ${job.error}`]);
    expect(await notifications()).toEqual([]);
  });

  it('answers 400 without name or key, and 401 without credentials', async () => {
    expect((await ingest({ key: `${sourceUrl}/file.pdf` })).status).toBe(400);
    expect((await ingest({ name: 'x' })).status).toBe(400);
    const anonymous = await fetch(`${e2e.suite.upload}/api/v1/assets/new/content/original/external`, { method: 'POST', body: '{}' });
    expect(anonymous.status).toBe(401);
  });
});
