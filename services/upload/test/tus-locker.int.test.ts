import { createHash, randomBytes } from 'node:crypto';
import { request as httpRequest, type ClientRequest } from 'node:http';
import { signJwt } from '@dam/auth-tokens';
import { createPool, type Pool } from '@dam/db';
import { createDatabase, scaled, testMinioClient, waitFor, type ServiceProcess } from '@dam/testing';
import { pgTusLocker } from '../src/adapters/tus-locker';
import { migrateUpload } from '../src/migrations';
import { startUploadFixtures, type UploadFixtures } from './harness';

const never = new AbortController().signal;
const settledWithin = async (p: Promise<unknown>, ms: number) => Promise.race([p.then(() => true), new Promise((r) => setTimeout(() => r(false), ms))]);
/** For what must settle: its limit (a few PostgreSQL round trips here) stretched for a slower machine. */
const settlesWithin = (p: Promise<unknown>, ms: number) => settledWithin(p, scaled(ms));

describe('the tus locker shared by upload replicas (PostgreSQL leases, table tus_locks)', () => {
  let db: string;
  const pools: Pool[] = [];
  /** Each replica its own pool of one connection, as in k8s/ (DB_POOL_MAX 1). */
  const replica = () => {
    const pool = createPool({ DATABASE_URL: db, DB_POOL_MAX: 1 });
    pools.push(pool);
    return pool;
  };

  beforeAll(async () => {
    db = await createDatabase('tus_locker');
    await migrateUpload(replica());
  }, scaled(60_000));
  afterAll(async () => {
    await Promise.all(pools.map((p) => p.end().catch(() => undefined)));
  });

  it('lets one replica at a time hold an upload; the other gets it once released', async () => {
    // A TTL far above the scaled limits below: the waiting lock is had through the unlock, never by expiry.
    const a = pgTusLocker(replica(), { ttlMs: 60_000 });
    const b = pgTusLocker(replica(), { ttlMs: 60_000, pollMs: 20 });
    const first = a.newLock('tus/0123');
    await first.lock(never, () => undefined);
    const second = b.newLock('tus/0123');
    const waiting = second.lock(never, () => undefined);
    expect(await settledWithin(waiting, 500)).toBe(false);
    // Another upload is not held up.
    const other = b.newLock('tus/4567');
    expect(
      await settlesWithin(
        other.lock(never, () => undefined),
        1_000,
      ),
    ).toBe(true);
    await first.unlock();
    expect(await settlesWithin(waiting, 2_000)).toBe(true);
    await second.unlock();
    await other.unlock();
    expect((await pools[0]!.query('SELECT id FROM tus_locks')).rows).toEqual([]);
  });

  it('asks a holder in the same process to let go (a retried PATCH after a cut), then takes the lock', async () => {
    const locker = pgTusLocker(replica(), { ttlMs: 5_000 });
    const first = locker.newLock('tus/aaaa');
    let asked = 0;
    await first.lock(never, () => {
      asked += 1;
      void first.unlock();
    });
    const second = locker.newLock('tus/aaaa');
    expect(
      await settlesWithin(
        second.lock(never, () => undefined),
        2_000,
      ),
    ).toBe(true);
    expect(asked).toBe(1);
    await second.unlock();
  });

  it('keeps the lease while its holder renews it, and lets another take it after the TTL once the holder died', async () => {
    const doomed = replica();
    const a = pgTusLocker(doomed, { ttlMs: 1_500, holder: 'doomed' });
    const b = pgTusLocker(replica(), { ttlMs: 1_500, pollMs: 50, acquireTimeoutMs: 30_000, holder: 'survivor' });
    await a.newLock('tus/89ab').lock(never, () => undefined);
    const waiting = b.newLock('tus/89ab').lock(never, () => undefined);
    // Renewed past its TTL: still held.
    expect(await settledWithin(waiting, 2_500)).toBe(false);
    await doomed.end(); // the process holding it dies: no unlock, no renewal
    const lease = async () =>
      (await pools[0]!.query<{ holder: string; expired: boolean }>(`SELECT holder, expires_at <= now() AS expired FROM tus_locks WHERE id = 'tus/89ab'`))
        .rows[0];
    expect(await settlesWithin(waiting, 10_000)).toBe(true);
    // Taken over, by the survivor, only once expired (PostgreSQL's clock decides both).
    expect(await lease()).toEqual({ holder: 'survivor', expired: false });
    // A lease whose holder died and that nobody takes over is swept once long expired.
    const gone = replica();
    await pgTusLocker(gone, { ttlMs: 300, holder: 'gone' })
      .newLock('tus/dead')
      .lock(never, () => undefined);
    await gone.end();
    await new Promise((r) => setTimeout(r, 400));
    const sweeper = pgTusLocker(replica());
    expect(await sweeper.sweepExpired(60_000)).toBe(0);
    expect(await sweeper.sweepExpired(0)).toBeGreaterThanOrEqual(1);
    expect((await pools[0]!.query(`SELECT id FROM tus_locks WHERE id = 'tus/dead'`)).rows).toEqual([]);
  });

  it('answers 423 (tus clients retry it) when the lock cannot be had in time', async () => {
    const a = pgTusLocker(replica(), { ttlMs: 5_000 });
    const b = pgTusLocker(replica(), { ttlMs: 5_000, pollMs: 20, acquireTimeoutMs: 300 });
    const held = a.newLock('tus/cdef');
    await held.lock(never, () => undefined);
    await expect(b.newLock('tus/cdef').lock(never, () => undefined)).rejects.toMatchObject({ status_code: 423 });
    await held.unlock();
  });

  it('cancels its request when its lease was taken by another holder (renewals failed for a whole TTL)', async () => {
    const pool = replica();
    const errors: string[] = [];
    const a = pgTusLocker(pool, { ttlMs: 600, holder: 'stalled', onError: (e) => errors.push(String(e)) });
    let cancelled = 0;
    await a.newLock('tus/lost').lock(never, () => {
      cancelled += 1;
    });
    // Another holder takes it over as if it had expired.
    await pools[0]!.query(`UPDATE tus_locks SET holder = 'other', token = 'other' WHERE id = 'tus/lost'`);
    await waitFor(() => cancelled > 0, { timeoutMs: scaled(5_000), description: 'the holder told to let go' });
    expect(errors.join()).toMatch(/taken by another holder/);
  });
});

const JWT_SECRET = 'jwt-secret-for-tus-lock-tests-0123456789abcdef';
const MiB = 1024 * 1024;
const b64 = (s: string) => Buffer.from(s).toString('base64');
const md5 = (b: Buffer) => createHash('md5').update(b).digest('hex');

async function readObject(bucket: string, key: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of await testMinioClient().getObject(bucket, key)) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

/**
 * Two upload processes on one database (two replicas), and tus requests to them as a client makes them: PATCHes of
 * one upload never write at once, whichever replica they reach, and a replica that dies holding an upload's lease
 * holds it up only until the lease expires.
 */
describe('tus PATCHes of one upload on two upload replicas', () => {
  let fx: UploadFixtures;
  let pool: Pool;
  let a: ServiceProcess;
  let b: ServiceProcess;
  const { token } = signJwt({ sub: 5, gid: 900, role: 1 }, JWT_SECRET, 3600);
  const headers = { authorization: `Bearer ${token}`, 'tus-resumable': '1.0.0' };
  const LEASE_TTL_MS = 3_000;

  beforeAll(async () => {
    fx = await startUploadFixtures('tus-lock');
    pool = createPool(fx.database);
    const env = { TUS_LOCK_TTL_MS: String(LEASE_TTL_MS) };
    [a, b] = await Promise.all([fx.startUpload(JWT_SECRET, env), fx.startUpload(JWT_SECRET, env)]);
  }, scaled(120_000));
  afterAll(async () => {
    await pool?.end();
    await fx?.stop();
  });

  const create = async (on: ServiceProcess, length: number): Promise<string> => {
    const res = await fetch(`${on.url}/api/v1/uploads/tus`, {
      method: 'POST',
      headers: { ...headers, 'upload-length': String(length), 'upload-metadata': `filename ${b64('lock.bin')}` },
    });
    expect(res.status).toBe(201);
    // The path of the upload: sent to either replica.
    return new URL(res.headers.get('location') as string).pathname;
  };
  const uploadIdOf = (path: string) => `tus/${path.split('/').pop() ?? ''}`;
  const lease = async (path: string) =>
    (await pool.query<{ holder: string; token: string; expires_at: Date }>('SELECT holder, token, expires_at FROM tus_locks WHERE id = $1', [uploadIdOf(path)]))
      .rows[0];
  const dbNow = async () => (await pool.query<{ now: Date }>('SELECT now() AS now')).rows[0]!.now;

  /** A PATCH whose body is sent as the test says: `send` writes bytes, `end` the last ones; `answer` its response. */
  function slowPatch(on: ServiceProcess, path: string, offset: number, length: number) {
    let req!: ClientRequest;
    const answer = new Promise<{ status: number; assetId: string | undefined }>((resolve, reject) => {
      req = httpRequest(`${on.url}${path}`, {
        method: 'PATCH',
        headers: { ...headers, 'upload-offset': String(offset), 'content-type': 'application/offset+octet-stream', 'content-length': String(length) },
      });
      req.on('response', (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, assetId: res.headers['x-asset-id'] as string | undefined }));
      });
      req.on('error', reject);
    });
    answer.catch(() => undefined);
    return { send: (bytes: Buffer) => req.write(bytes), end: (bytes: Buffer) => req.end(bytes), answer };
  }
  const patch = async (on: ServiceProcess, path: string, offset: number, body: Buffer) => {
    const res = await fetch(`${on.url}${path}`, {
      method: 'PATCH',
      headers: { ...headers, 'upload-offset': String(offset), 'content-type': 'application/offset+octet-stream' },
      body,
    });
    return { status: res.status, assetId: res.headers.get('x-asset-id') ?? undefined };
  };

  it('makes a PATCH on the other replica wait until the first one is done: they never write at once', async () => {
    const bytes = randomBytes(2 * MiB);
    const path = await create(a, bytes.length);
    const first = slowPatch(a, path, 0, bytes.length);
    first.send(bytes.subarray(0, MiB));
    await waitFor(async () => (await lease(path)) !== undefined, { timeoutMs: scaled(10_000), description: "replica a's lease" });
    const held = await lease(path);
    // The same upload from the same offset on replica b (a client that thought the first PATCH lost).
    const second = patch(b, path, 0, bytes);
    expect(await settledWithin(second, 1_500)).toBe(false);
    expect((await lease(path))?.token).toBe(held?.token);
    first.end(bytes.subarray(MiB));
    const [one, two] = await Promise.all([first.answer, second]);
    // The first made the asset; the second wrote nothing: it ran once the first's bytes were all in (tus releases
    // the lock before it makes the asset), so it found the offset moved (409), or the upload already gone (404).
    expect(one.status).toBe(204);
    expect(one.assetId).toMatch(/^[A-Za-z0-9]{32}$/);
    expect([404, 409]).toContain(two.status);
    expect(md5(await readObject(fx.bucket, `originals/900/${one.assetId}`))).toBe(md5(bytes));
    expect(await lease(path)).toBeUndefined();
  });

  it('takes over the lease of a replica that died writing the upload only once it expired, and finishes the upload', async () => {
    const doomed = await fx.startUpload(JWT_SECRET, { TUS_LOCK_TTL_MS: String(LEASE_TTL_MS) });
    const bytes = randomBytes(2 * MiB);
    const path = await create(doomed, bytes.length);
    const cut = slowPatch(doomed, path, 0, bytes.length);
    cut.send(bytes.subarray(0, MiB));
    await waitFor(async () => (await lease(path)) !== undefined, { timeoutMs: scaled(10_000), description: "the doomed replica's lease" });
    doomed.kill('SIGKILL');
    await doomed.exited;
    // Its last renewal is final: the lease stays the dead holder's until this moment.
    const dead = (await lease(path))!;
    const head = await fetch(`${b.url}${path}`, { method: 'HEAD', headers });
    const offset = Number(head.headers.get('upload-offset'));
    const resumed = patch(b, path, offset, bytes.subarray(offset));
    const done = await resumed;
    const answeredAt = await dbNow();
    expect(done.status).toBe(204);
    expect(done.assetId).toMatch(/^[A-Za-z0-9]{32}$/);
    expect(md5(await readObject(fx.bucket, `originals/900/${done.assetId}`))).toBe(md5(bytes));
    // Never before the dead holder's lease expired (by PostgreSQL's clock).
    expect(answeredAt.getTime()).toBeGreaterThanOrEqual(dead.expires_at.getTime());
    expect(await lease(path)).toBeUndefined();
  });
});
