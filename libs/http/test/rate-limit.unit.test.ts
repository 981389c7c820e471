import type { AddressInfo } from 'node:net';
import type { RequestHandler } from 'express';
import { unauthenticated } from '@dam/errors';
import { createLogger } from '@dam/logging';
import { createHttpApp, finishApp } from '../src/app';
import { createEdgeLimits, edgeLimitsFromConfig, RateLimiter, type EdgeLimitOptions } from '../src/rate-limit';

/**
 * The limit tests refill a token every 10 s (6 a minute), so that a slow machine sending their requests cannot earn
 * one back mid-test; Retry-After is then the whole seconds until the next token, 1 to 10.
 */
const WITHIN_A_TOKEN = /^([1-9]|10)$/;

describe('RateLimiter', () => {
  it('allows a burst, then refuses with the time until the next token', () => {
    const limiter = new RateLimiter(60, 3); // one token a second
    const t = 1_000_000;
    expect([1, 2, 3].map(() => limiter.take('a', t).allowed)).toEqual([true, true, true]);
    const refused = limiter.take('a', t);
    expect(refused).toEqual({ allowed: false, remaining: 0, retryAfterSeconds: 1 });
    expect(limiter.take('b', t).allowed).toBe(true);
  });

  it('refills at the configured rate, never above the burst', () => {
    const limiter = new RateLimiter(60, 2);
    const t = 0;
    limiter.take('a', t);
    limiter.take('a', t);
    expect(limiter.take('a', t + 500).allowed).toBe(false);
    expect(limiter.take('a', t + 1000).allowed).toBe(true);
    expect(limiter.take('a', t + 1_000_000).remaining).toBe(1);
  });

  it('reports a longer wait for slow rates', () => {
    const limiter = new RateLimiter(6, 1); // one token every 10 s
    limiter.take('a', 0);
    expect(limiter.take('a', 0).retryAfterSeconds).toBe(10);
  });

  it('forgets callers whose buckets are full again once over its key budget', () => {
    const limiter = new RateLimiter(60, 1, 2);
    limiter.take('a', 0);
    limiter.take('b', 0);
    limiter.take('c', 5000);
    expect(limiter.size).toBeLessThanOrEqual(2);
    expect(limiter.take('c', 5000).allowed).toBe(false);
  });
});

describe('createEdgeLimits', () => {
  /**
   * An edge with one authenticated route: `who` header = a valid caller, anything else = 401. `calls` counts
   * how often the authenticator ran (what auth lookups would cost).
   */
  async function withEdge(opts: EdgeLimitOptions, fn: (base: string, calls: () => number) => Promise<void>): Promise<void> {
    const logger = createLogger({ service: 'rate-limit-test', level: 'silent' });
    const app = createHttpApp({ logger, trustProxy: false });
    const limits = createEdgeLimits(opts);
    let calls = 0;
    const authenticate: RequestHandler = (req, res, next) => {
      calls += 1;
      const who = req.header('who');
      if (!who) return next(unauthenticated());
      res.locals.who = who;
      next();
    };
    app.get('/private', limits.authenticated(authenticate, (res) => String(res.locals.who)), (_req, res) => {
      res.json({ ok: true });
    });
    app.get('/public', limits.beforeAuth, (_req, res) => {
      res.json({ ok: true });
    });
    finishApp(app, logger);
    const server = app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    try {
      await fn(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, () => calls);
    } finally {
      server.closeAllConnections();
      server.close();
    }
  }

  const statuses = async (n: number, send: (i: number) => Promise<Response>): Promise<number[]> => {
    const out: number[] = [];
    for (let i = 0; i < n; i += 1) {
      const res = await send(i);
      await res.body?.cancel();
      out.push(res.status);
    }
    return out;
  };

  it('spends the per-address budget before authenticating, so bad credentials are limited too', async () => {
    await withEdge({ perAddress: { perMinute: 6, burst: 3 } }, async (base, calls) => {
      const sent = await statuses(10, (i) => fetch(`${base}/private`, { headers: { 'x-forwarded-for': `198.51.100.${i}` } }));
      expect(sent).toEqual([401, 401, 401, 429, 429, 429, 429, 429, 429, 429]);
      expect(calls()).toBe(3);
      const refused = await fetch(`${base}/public`);
      expect(refused.status).toBe(429);
      expect(refused.headers.get('retry-after')).toMatch(WITHIN_A_TOKEN);
      expect(await refused.json()).toEqual({ error: { code: 'RATE_LIMITED', message: expect.any(String) } });
    });
  });

  it('refuses an address after its failed authentications without running the authenticator', async () => {
    await withEdge({ authFailuresPerAddress: { perMinute: 6, burst: 2 } }, async (base, calls) => {
      // Successes spend nothing of the failure budget.
      expect(await statuses(5, () => fetch(`${base}/private`, { headers: { who: 'alice' } }))).toEqual([200, 200, 200, 200, 200]);
      expect(await statuses(6, () => fetch(`${base}/private`))).toEqual([401, 401, 429, 429, 429, 429]);
      expect(calls()).toBe(7);
      // Once refused, even good credentials from that address wait.
      expect((await fetch(`${base}/private`, { headers: { who: 'alice' } })).status).toBe(429);
    });
  });

  it('limits each principal on its own after authenticating, with X-RateLimit headers', async () => {
    await withEdge({ perPrincipal: { perMinute: 6, burst: 2 } }, async (base) => {
      const as = (who: string) => fetch(`${base}/private`, { headers: { who } });
      const first = await as('alice');
      expect(first.headers.get('x-ratelimit-limit')).toBe('6');
      expect(first.headers.get('x-ratelimit-remaining')).toBe('1');
      expect((await as('alice')).status).toBe(200);
      const refused = await as('alice');
      expect(refused.status).toBe(429);
      expect(refused.headers.get('retry-after')).toMatch(WITHIN_A_TOKEN);
      expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('RATE_LIMITED');
      expect((await as('bob')).status).toBe(200);
    });
  });

  it('turns a budget of 0 per minute off', async () => {
    const off = { perMinute: 0, burst: 1 };
    await withEdge({ perAddress: off, authFailuresPerAddress: off, perPrincipal: off }, async (base) => {
      expect(new Set(await statuses(5, () => fetch(`${base}/private`)))).toEqual(new Set([401]));
      const ok = await fetch(`${base}/private`, { headers: { who: 'alice' } });
      expect(ok.status).toBe(200);
      expect(ok.headers.get('x-ratelimit-limit')).toBeNull();
    });
  });

  it('maps the edge variables', () => {
    expect(
      edgeLimitsFromConfig({
        RATE_LIMIT_PER_MINUTE: 1,
        RATE_LIMIT_BURST: 2,
        RATE_LIMIT_ADDRESS_PER_MINUTE: 3,
        RATE_LIMIT_ADDRESS_BURST: 4,
        AUTH_FAILURES_PER_MINUTE: 5,
        AUTH_FAILURES_BURST: 6,
      }),
    ).toEqual({
      perPrincipal: { perMinute: 1, burst: 2 },
      perAddress: { perMinute: 3, burst: 4 },
      authFailuresPerAddress: { perMinute: 5, burst: 6 },
    });
  });
});
