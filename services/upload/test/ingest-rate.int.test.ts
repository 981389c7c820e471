import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { JobCommand, MessageContext } from '@dam/events';
import { HostRateLimiter } from '@dam/http';
import { createLogger } from '@dam/logging';
import { createStorage, type Storage } from '@dam/storage';
import { createBucket, testS3Config } from '@dam/testing';
import { ingestJobs, type IngestConsumerDeps } from '../src/consumers/ingest-job.consumer';
import { IngestDeferred, IngestFailure, type IngestConfig } from '../src/domain/ingest';
import { downloadOriginal } from '../src/use-cases/download-original.use-case';

/**
 * Security review F20: ingest downloads are rated per group and host, and a group over its rate waits its turn
 * instead of failing its assets.
 */
let server: Server;
let base: string;
let storage: Storage;

beforeAll(async () => {
  server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('hello, ingest');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  storage = createStorage(testS3Config(await createBucket('ingest-rate')));
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

/** One download a minute per group and host, bursts of 2: no token comes back during the test. */
const config = (): IngestConfig => ({
  allowHosts: ['127.0.0.1'],
  s3Buckets: [],
  maxBytes: 1024 * 1024,
  connectTimeoutMs: 5000,
  idleTimeoutMs: 5000,
  rateLimiter: new HostRateLimiter(1, 2),
});
const download = (cfg: IngestConfig, groupId: string, n: number) =>
  downloadOriginal(storage, cfg, storage.bucket, { groupId, assetId: `asset${n}`, source: `${base}/file.txt` }, () => undefined);

describe('ingest downloads per group and host (security review F20)', () => {
  it("does not let one group's burst to a host fail another group's ingest from it", async () => {
    const cfg = config();
    await download(cfg, '1', 1);
    await download(cfg, '1', 2);
    const third = await download(cfg, '1', 3).catch((error: unknown) => error);
    // Group 2, same host, same moment: its own budget (before: IngestFailure "too many downloads from 127.0.0.1").
    const other = await download(cfg, '2', 4);
    expect(other.size).toBe('hello, ingest'.length);
    // Group 1 has spent its burst on this host: its next ingest is deferred (retried later), not failed.
    expect(third).not.toBeInstanceOf(IngestFailure);
    expect(third).toBeInstanceOf(IngestDeferred);
    expect((third as IngestDeferred).retryAfterMs).toBeGreaterThan(0);
  });

  it('tells the refused successive slots, so their retries do not come back for one token', () => {
    let now = 0;
    const limiter = new HostRateLimiter(60, 1, () => now);
    expect(limiter.attempt('h', 'g')).toEqual({ ok: true });
    const waits = [limiter.attempt('h', 'g'), limiter.attempt('h', 'g'), limiter.attempt('h', 'g')].map((d) => (d.ok ? 0 : d.retryAfterMs));
    expect(waits).toEqual([1000, 2000, 3000]);
    expect(limiter.attempt('h', 'other').ok).toBe(true);
    now += 1000;
    expect(limiter.attempt('h', 'g').ok).toBe(true);
  });
});

describe('an ingest job over its group rate (security review F20)', () => {
  const command = (jobId: number): JobCommand => ({
    id: `job-${jobId}-run-0`,
    job_id: jobId,
    attempt: 0,
    type: 'ingest',
    group_id: '7',
    asset_id: `ingest${jobId}`,
    source_checksum: '',
    content_type: '',
    params: { key: `${base}/file.txt`, name: 'file.txt' },
  });
  function harness() {
    const deps: IngestConsumerDeps = {
      storage,
      logger: createLogger({ service: 'ingest-rate-test', level: 'silent' }),
      ingest: { ...config(), rateLimiter: new HostRateLimiter(1, 1) },
      ownBucket: storage.bucket,
    };
    const naks: Array<number | undefined> = [];
    const ctx = (deliveryCount: number) =>
      ({
        subject: 'x',
        deliveryCount,
        headers: undefined,
        msg: { nak: (ms?: number) => naks.push(ms) },
        working: () => undefined,
        keepAlive: () => () => undefined,
      }) as unknown as MessageContext;
    const jobs = ingestJobs(deps, 3);
    const run = (c: JobCommand, delivery: number) =>
      jobs.run({
        command: c,
        ctx: ctx(delivery),
        progress: () => undefined,
        step: () => undefined,
        log: { job_id: c.job_id, asset_id: c.asset_id, group_id: c.group_id, attempt: 0, delivery },
      });
    return { run, naks };
  }

  it('is redelivered later (nak with a delay) instead of failing its asset', async () => {
    const h = harness();
    expect(await h.run(command(1), 1)).toMatchObject({ state: 'COMPLETED' });
    // No final report: the job stays QUEUED at metadata and comes back once the group has a token.
    expect(await h.run(command(2), 1)).toEqual({ state: 'DEFERRED' });
    expect(h.naks).toHaveLength(1);
    expect(h.naks[0]).toBeGreaterThanOrEqual(1000);
  });

  it('fails on its last delivery, as any job the source keeps refusing', async () => {
    const h = harness();
    await h.run(command(3), 1);
    expect(await h.run(command(4), 3)).toMatchObject({ state: 'FAILED', report: { error: expect.stringContaining('too many downloads') } });
    expect(h.naks).toHaveLength(0);
  });
});
