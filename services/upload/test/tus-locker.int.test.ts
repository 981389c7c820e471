import { connectNats } from '@dam/events';
import { Kvm } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/nats-core';
import { scaled, startNats, type TestNats } from '@dam/testing';
import { natsTusLocker, TUS_LOCKS_BUCKET } from '../src/adapters/tus-locker';

let nats: TestNats;
const connections: NatsConnection[] = [];
const replica = async () => {
  // Each replica its own connection, as the upload service's own identity (its NATS permissions are checked).
  const nc = await connectNats(nats.url, 'upload', nats.seed('upload'));
  connections.push(nc);
  return nc;
};

beforeAll(async () => {
  nats = await startNats();
});
afterAll(async () => {
  await Promise.all(connections.map((nc) => nc.close()));
  await nats?.stop();
});

const never = new AbortController().signal;
const settledWithin = async (p: Promise<unknown>, ms: number) => Promise.race([p.then(() => true), new Promise((r) => setTimeout(() => r(false), ms))]);
/** For what must settle: its limit (the time a few KV round trips take here) stretched for a slower machine. */
const settlesWithin = (p: Promise<unknown>, ms: number) => settledWithin(p, scaled(ms));

describe('the tus locker shared by upload replicas (JetStream KV TUS_LOCKS)', () => {
  it('lets one replica at a time hold an upload; the other gets it once released', async () => {
    // A TTL far above the scaled limits below: the waiting lock is had through the unlock, never by expiry.
    const a = await natsTusLocker(await replica(), { ttlMs: 60_000 });
    const b = await natsTusLocker(await replica(), { ttlMs: 60_000, pollMs: 20 });
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
  });

  it('asks a holder in the same process to let go (a retried PATCH after a cut), then takes the lock', async () => {
    const locker = await natsTusLocker(await replica(), { ttlMs: 5_000 });
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

  it('keeps the lock while its holder renews it, and frees it after the TTL once the holder died', async () => {
    const doomed = await replica();
    const a = await natsTusLocker(doomed, { ttlMs: 1_500 });
    const b = await natsTusLocker(await replica(), { ttlMs: 1_500, pollMs: 50, acquireTimeoutMs: 30_000 });
    expect((await new Kvm(doomed).open(TUS_LOCKS_BUCKET).then((kv) => kv.status())).ttl).toBe(1_500);
    await a.newLock('tus/89ab').lock(never, () => undefined);
    const waiting = b.newLock('tus/89ab').lock(never, () => undefined);
    // Renewed past its TTL: still held.
    expect(await settledWithin(waiting, 2_500)).toBe(false);
    await doomed.close(); // the process holding it dies: no unlock, no renewal
    // The TTL counted from the last renewal: 1-1.5 s here, though the bucket was made with a TTL of 5 s above (it
    // took 4.5 s, and once in CI over 5 s, before the locker gave the bucket its own TTL).
    const died = Date.now();
    expect(await settlesWithin(waiting, 10_000)).toBe(true);
    expect(Date.now() - died).toBeLessThan(3_500);
  });

  it('answers 423 (tus clients retry it) when the lock cannot be had in time', async () => {
    const a = await natsTusLocker(await replica(), { ttlMs: 5_000 });
    const b = await natsTusLocker(await replica(), { ttlMs: 5_000, pollMs: 20, acquireTimeoutMs: 300 });
    const held = a.newLock('tus/cdef');
    await held.lock(never, () => undefined);
    await expect(b.newLock('tus/cdef').lock(never, () => undefined)).rejects.toMatchObject({ status_code: 423 });
    await held.unlock();
  });
});
