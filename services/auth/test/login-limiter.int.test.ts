import type { Pool } from '@dam/db';
import { LoginAttemptRepository } from '../src/adapters/login-attempt.repository';
import { LoginLimiter, type LoginLimits } from '../src/domain/login-limiter';
import { ADMIN, asService, call, migratedPool, principalHeaders, startAuth, type TestAuth } from './harness';

// The limiter's rules, with its counts in PostgreSQL as every auth replica keeps them (issue 31, D9).
describe('LoginLimiter', () => {
  let pool: Pool;
  beforeAll(async () => {
    pool = await migratedPool();
  });
  afterAll(async () => pool.end());
  // Every test from empty tables.
  beforeEach(async () => {
    await pool.query('TRUNCATE login_pairs, login_failure_windows');
  });

  const limiter = (limits: LoginLimits, now?: () => number) => new LoginLimiter(new LoginAttemptRepository(pool), limits, now);
  type Limiter = LoginLimiter;

  // An admitted attempt counts as a failure unless it is settled otherwise.
  const fail = async (l: Limiter, email: string, address: string) => void (await l.begin(email, address));
  const tryIt = async (l: Limiter, email: string, address: string) => (await l.begin(email, address)).abandoned();
  const RATE_LIMITED = expect.objectContaining({ kind: 'RATE_LIMITED' });

  it('delays one (email, address) progressively after the free failures, and never blocks another address', async () => {
    let now = 0;
    const l = limiter({ maxPerEmail: 100, maxPerAddress: 100, windowSeconds: 60, freeFailures: 2, maxDelaySeconds: 8 }, () => now);
    await fail(l, 'a', 'attacker');
    await expect(tryIt(l, 'a', 'attacker')).resolves.toBeUndefined();
    await fail(l, 'a', 'attacker'); // the second: the next attempt waits 1 s
    await expect(tryIt(l, 'a', 'attacker')).rejects.toEqual(expect.objectContaining({ kind: 'RATE_LIMITED', headers: { 'Retry-After': '1' } }));
    await expect(tryIt(l, 'a', 'owner')).resolves.toBeUndefined();
    const waitAfterFailing = async (): Promise<string> => {
      await fail(l, 'a', 'attacker');
      try {
        await (await l.begin('a', 'attacker')).abandoned();
        return 'admitted';
      } catch (err) {
        return (err as { headers: Record<string, string> }).headers['Retry-After'] ?? '';
      }
    };
    const waits: string[] = [];
    for (let i = 0; i < 5; i += 1) {
      now += Number(waits.at(-1) ?? 1) * 1000; // exactly when the pair may try again
      waits.push(await waitAfterFailing());
    }
    // 2 s, 4 s, 8 s, then the cap.
    expect(waits).toEqual(['2', '4', '8', '8', '8']);
    await expect(tryIt(l, 'a', 'owner')).resolves.toBeUndefined();
    // The owner's success does not clear the attacker's pair.
    await (await l.begin('a', 'owner')).succeeded();
    await expect(tryIt(l, 'a', 'attacker')).rejects.toEqual(RATE_LIMITED);
    now += 8000;
    await expect(tryIt(l, 'a', 'attacker')).resolves.toBeUndefined();
  });

  it('counts an attempt from its start, so a burst in parallel gets no more tries than one after another', async () => {
    const l = limiter({ maxPerEmail: 100, maxPerAddress: 100, windowSeconds: 60, freeFailures: 3 });
    // None of them settled: the passwords are still being checked.
    const outcomes = await Promise.allSettled(Array.from({ length: 10 }, () => l.begin('a', 'burst')));
    expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(3);
    expect(outcomes.filter((o) => o.status === 'rejected').map((o) => (o as PromiseRejectedResult).reason)).toEqual(Array(7).fill(RATE_LIMITED));
  });

  // Past a bound an attempt is admitted, held, and a wrong password then answers 429 (never a right one).
  const held = async (l: Limiter, email: string, address: string): Promise<number> => {
    const attempt = await l.begin(email, address);
    await attempt.abandoned();
    return attempt.holdMs;
  };

  it('a right password or an attempt without a verdict counts for nothing', async () => {
    const l = limiter({ maxPerEmail: 100, maxPerAddress: 3, windowSeconds: 60, freeFailures: 2, boundDelayMs: 1500 });
    await fail(l, 'a', 'ip');
    for (let i = 0; i < 5; i += 1) await (await l.begin('a', 'ip')).succeeded();
    for (let i = 0; i < 5; i += 1) await (await l.begin('b', 'ip')).abandoned();
    await fail(l, 'c', 'ip');
    expect(await held(l, 'd', 'ip')).toBe(0);
    await fail(l, 'd', 'ip');
    expect(await held(l, 'e', 'ip')).toBe(1500);
  });

  it('an abandoned attempt puts its pair back as it was', async () => {
    const l = limiter({ maxPerEmail: 100, maxPerAddress: 100, windowSeconds: 60, freeFailures: 2 });
    await fail(l, 'a', 'ip');
    // Abandoned while the second failure would start the delay: the pair has one failure again, not two.
    for (let i = 0; i < 3; i += 1) await tryIt(l, 'a', 'ip');
    await fail(l, 'a', 'ip');
    await expect(tryIt(l, 'a', 'ip')).rejects.toEqual(RATE_LIMITED);
  });

  it('attempts of one pair abandoned while others ran leave no failure behind', async () => {
    const l = limiter({ maxPerEmail: 100, maxPerAddress: 100, windowSeconds: 60, freeFailures: 3 });
    const first = await l.begin('a', 'ip');
    const second = await l.begin('a', 'ip');
    // The first is no longer the pair's last attempt when it is abandoned; the second then puts the pair back.
    await first.abandoned();
    await second.abandoned();
    await fail(l, 'a', 'ip');
    await fail(l, 'a', 'ip');
    // Two failures: a third try is admitted (one left over would make it wait).
    await expect(tryIt(l, 'a', 'ip')).resolves.toBeUndefined();
  });

  it('a pair without a delay is never refused, even by a replica whose clock is a moment behind', async () => {
    let now = 10_000;
    const ahead = limiter({ maxPerEmail: 100, maxPerAddress: 100, windowSeconds: 60, freeFailures: 3 }, () => now);
    const behind = limiter({ maxPerEmail: 100, maxPerAddress: 100, windowSeconds: 60, freeFailures: 3 }, () => now - 50);
    await fail(ahead, 'a', 'ip');
    await expect(tryIt(behind, 'a', 'ip')).resolves.toBeUndefined();
    now += 1;
    await fail(ahead, 'a', 'ip');
    await fail(ahead, 'a', 'ip');
    // The third failure starts the delay: the replica behind waits it out too, and a little longer.
    await expect(tryIt(behind, 'a', 'ip')).rejects.toEqual(expect.objectContaining({ kind: 'RATE_LIMITED', headers: { 'Retry-After': '2' } }));
  });

  it('past the bound of one email over all addresses, holds its attempts and fails a wrong one with 429', async () => {
    let now = 0;
    const l = limiter({ maxPerEmail: 5, maxPerAddress: 100, windowSeconds: 60 }, () => now);
    for (let i = 0; i < 5; i += 1) await fail(l, 'a', `10.0.0.${i}`);
    now += 20_000;
    const wrong = await l.begin('a', 'elsewhere');
    expect(wrong.holdMs).toBe(2000);
    expect(wrong.failed()).toEqual(expect.objectContaining({ kind: 'RATE_LIMITED', headers: { 'Retry-After': '40' } }));
    const right = await l.begin('a', 'another');
    expect(right.holdMs).toBe(2000);
    await expect(right.succeeded()).resolves.toBeUndefined();
    expect(await held(l, 'b', 'elsewhere')).toBe(0);
    // Below the bound a wrong password is a plain 401: no error from the limiter.
    expect((await l.begin('b', 'elsewhere')).failed()).toBeUndefined();
    now += 40_000;
    expect(await held(l, 'a', 'yet-another')).toBe(0);
  });

  it('past the bound of an address across emails, holds its attempts', async () => {
    const l = limiter({ maxPerEmail: 100, maxPerAddress: 3, windowSeconds: 60 });
    for (const e of ['a', 'b', 'c']) await fail(l, e, 'ip');
    expect(await held(l, 'z', 'ip')).toBe(2000);
    expect((await l.begin('z', 'ip')).failed()).toEqual(RATE_LIMITED);
    expect(await held(l, 'z', 'other')).toBe(0);
  });

  it('counts an IPv6 client by its /64', async () => {
    const l = limiter({ maxPerEmail: 100, maxPerAddress: 100, windowSeconds: 60, freeFailures: 1 });
    await fail(l, 'a', '2001:db8:1:2::1');
    await expect(tryIt(l, 'a', '2001:db8:1:2::2')).rejects.toEqual(RATE_LIMITED);
    await expect(tryIt(l, 'a', '2001:db8:1:3::1')).resolves.toBeUndefined();
  });

  it('forgets pairs and windows once they are over', async () => {
    let now = 1_000_000;
    const l = limiter({ maxPerEmail: 100, maxPerAddress: 100, windowSeconds: 60, freeFailures: 1, maxDelaySeconds: 8 }, () => now);
    await fail(l, 'gone', '198.51.100.99');
    const repo = new LoginAttemptRepository(pool);
    const rows = async () =>
      Number((await pool.query<{ n: string }>('SELECT (SELECT count(*) FROM login_pairs) + (SELECT count(*) FROM login_failure_windows) AS n')).rows[0]?.n);
    // The pair, the email's window, the address's.
    expect(await rows()).toBe(3);
    // The pair waits 1 s and is forgotten a window after that: it outlives the two windows.
    expect(await repo.prune(now + 60_000)).toBe(2);
    expect(await rows()).toBe(1);
    now += 61_000;
    expect(await repo.prune(now)).toBe(1);
    expect(await rows()).toBe(0);
    // Forgotten: free again.
    await expect(tryIt(l, 'gone', '198.51.100.99')).resolves.toBeUndefined();
  });
});

describe('two auth replicas on one database share the login limits (issue 31, D9)', () => {
  let a: TestAuth;
  let b: TestAuth;
  let now = Date.parse('2026-01-01T00:00:00Z');
  beforeAll(async () => {
    const limits = { maxPerEmail: 100, maxPerAddress: 6, windowSeconds: 900, freeFailures: 3, maxDelaySeconds: 900, boundDelayMs: 0 };
    a = await startAuth(limits, { now: () => now });
    b = await startAuth(limits, { now: () => now, database: a.database });
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
  });

  const login = (replica: TestAuth, email: string, password: string, clientAddress: string) =>
    call(`${replica.url}/api/v1/login`, 'POST', { email, password }, asService({ caller: 'gateway', clientAddress }));
  const createUser = async (email: string) => {
    const res = await call(`${a.url}/api/v1/users`, 'POST', { email, password: 'right-password', role_id: 3 }, principalHeaders(1, 1, 1));
    expect(res.status).toBe(201);
  };

  it("failures through replica A delay the pair at replica B, and B's at A", async () => {
    const attacker = '203.0.113.81';
    const statuses: number[] = [];
    for (let i = 0; i < 3; i += 1) statuses.push((await login(a, ADMIN.email, `guess-${i}`, attacker)).status);
    // In each replica's memory, B had seen no failure and let the guess through (401).
    const atB = await login(b, ADMIN.email, 'guess-3', attacker);
    statuses.push(atB.status);
    expect(statuses).toEqual([401, 401, 401, 429]);
    expect(Number(atB.headers.get('retry-after'))).toBe(1);
    // The delay is one, not one per replica: once it is over, one more failure at B, then A makes the pair wait 2 s.
    now += 1000;
    expect((await login(b, ADMIN.email, 'guess-4', attacker)).status).toBe(401);
    const atA = await login(a, ADMIN.email, 'guess-5', attacker);
    expect(atA.status).toBe(429);
    expect(Number(atA.headers.get('retry-after'))).toBe(2);
    // The admin, from elsewhere, through either replica.
    expect((await login(b, ADMIN.email, ADMIN.password, '198.51.100.81')).status).toBe(200);
  });

  it('a burst spread over both replicas gets no more tries than one after another', async () => {
    await createUser('burst2@example.com');
    const replies = await Promise.all(Array.from({ length: 8 }, (_, i) => login(i % 2 === 0 ? a : b, 'burst2@example.com', `guess-${i}`, '192.0.2.201')));
    const counts = replies.reduce<Record<number, number>>((acc, r) => ({ ...acc, [r.status]: (acc[r.status] ?? 0) + 1 }), {});
    expect(counts).toEqual({ 401: 3, 429: 5 });
  });

  it("one address's bound over all emails is one bound, not one per replica", async () => {
    const sprayer = '198.51.100.202';
    // 6 failures in all, 3 through each replica: the bound (6) is spent.
    for (let i = 0; i < 6; i += 1) expect((await login(i % 2 === 0 ? a : b, `nobody-${i}@example.com`, 'spray', sprayer)).status).toBe(401);
    const past = await login(a, 'nobody-6@example.com', 'spray', sprayer);
    expect(past.status).toBe(429);
    expect(past.body.error.code).toBe('RATE_LIMITED');
    // The right password from that address still logs in.
    expect((await login(b, ADMIN.email, ADMIN.password, sprayer)).status).toBe(200);
  });
});
