import type { AddressInfo } from 'node:net';
import type { RequestHandler } from 'express';
import { unauthenticated } from '@dam/errors';
import { z } from 'zod';
import { edgeLimitEnv } from '@dam/config';
import { createLogger } from '@dam/logging';
import { createHttpApp, finishApp } from '../src/app';
import { createEdgeLimits, dnsReplicaCount, edgeLimitsFromConfig, RateLimiter, type EdgeLimitOptions } from '../src/rate-limit';

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
    app.get(
      '/private',
      limits.authenticated(authenticate, (res) => String(res.locals.who)),
      (_req, res) => {
        res.json({ ok: true });
      },
    );
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
    const limits = edgeLimitsFromConfig({
      RATE_LIMIT_PER_MINUTE: 1,
      RATE_LIMIT_BURST: 2,
      RATE_LIMIT_ADDRESS_PER_MINUTE: 3,
      RATE_LIMIT_ADDRESS_BURST: 4,
      AUTH_FAILURES_PER_MINUTE: 5,
      AUTH_FAILURES_BURST: 6,
    });
    expect(limits).toEqual({
      perPrincipal: { perMinute: 1, burst: 2 },
      perAddress: { perMinute: 3, burst: 4 },
      authFailuresPerAddress: { perMinute: 5, burst: 6 },
      replicas: expect.any(Function),
    });
    expect(limits.replicas()).toBe(1);
  });

  it('reads RATE_LIMIT_REPLICAS and RATE_LIMIT_PEERS through the edge schema', async () => {
    const schema = z.object(edgeLimitEnv({ perMinute: 1200, burst: 200, addressPerMinute: 6000, addressBurst: 600 }));
    expect(edgeLimitsFromConfig(schema.parse({})).replicas()).toBe(1);
    expect(edgeLimitsFromConfig(schema.parse({ RATE_LIMIT_REPLICAS: '3' })).replicas()).toBe(3);
    expect(() => schema.parse({ RATE_LIMIT_REPLICAS: '0' })).toThrow();
    const asked: string[] = [];
    const peers = edgeLimitsFromConfig(schema.parse({ RATE_LIMIT_REPLICAS: '2', RATE_LIMIT_PEERS: 'gateway-peers' }), {
      count: async (name) => {
        asked.push(name);
        return 5;
      },
    });
    // The static count until the first lookup answers, then the lookup's.
    expect(peers.replicas()).toBe(2);
    await new Promise((r) => setImmediate(r));
    expect(peers.replicas()).toBe(5);
    expect(asked).toEqual(['gateway-peers']);
  });
});

// The budgets are the deployment's totals (issue 31): the load balancer spreads a client's requests over the
// replicas, each keeps its share in memory.
describe('budgets shared by the replicas of an edge', () => {
  it('gives each replica 1/n of the rate and of the burst, and reports the total', () => {
    let n = 3;
    const limiter = new RateLimiter(60, 6, undefined, () => n); // a token a second in all: one every 3 s here
    const first = limiter.take('a', 0);
    expect(first).toEqual({ allowed: true, remaining: 3, retryAfterSeconds: 0 });
    expect(limiter.take('a', 0).allowed).toBe(true);
    expect(limiter.take('a', 0)).toEqual({ allowed: false, remaining: 0, retryAfterSeconds: 3 });
    expect(limiter.take('a', 3000).allowed).toBe(true);
    // Scaled in to one replica: the whole budget here, refilled at the whole rate.
    n = 1;
    expect(limiter.take('a', 4000).allowed).toBe(true);
    expect(limiter.take('a', 4000).allowed).toBe(false);
    expect(limiter.take('a', 1_000_000).remaining).toBe(5);
    // Never less than one request of burst, whatever the count (a bad answer counts as one replica).
    n = 100;
    expect(limiter.take('b', 0).allowed).toBe(true);
    n = Number.NaN;
    expect(limiter.take('c', 0).remaining).toBe(5);
  });

  async function withEdges(
    opts: EdgeLimitOptions,
    fn: (send: (path: string, headers?: Record<string, string>) => Promise<Response>) => Promise<void>,
  ): Promise<void> {
    const logger = createLogger({ service: 'rate-limit-test', level: 'silent' });
    const servers = [0, 1].map(() => {
      const app = createHttpApp({ logger, trustProxy: false });
      const limits = createEdgeLimits(opts);
      app.get('/public', limits.beforeAuth, (_req, res) => {
        res.json({ ok: true });
      });
      const alice: RequestHandler = (_req, _res, next) => next();
      app.get(
        '/private',
        limits.authenticated(alice, () => 'alice'),
        (_req, res) => {
          res.json({ ok: true });
        },
      );
      finishApp(app, logger);
      return app.listen(0, '127.0.0.1');
    });
    await Promise.all(servers.map((s) => new Promise((r) => s.once('listening', r))));
    // A round-robin load balancer, as the ingress spreads one client's requests.
    let next = 0;
    const send = (path: string, headers: Record<string, string> = {}) => {
      const server = servers[next++ % servers.length];
      return fetch(`http://127.0.0.1:${(server?.address() as AddressInfo).port}${path}`, { headers });
    };
    try {
      await fn(send);
    } finally {
      for (const s of servers) {
        s.closeAllConnections();
        s.close();
      }
    }
  }

  const statusesOf = async (n: number, send: () => Promise<Response>): Promise<number[]> => {
    const out: number[] = [];
    for (let i = 0; i < n; i += 1) {
      const res = await send();
      await res.body?.cancel();
      out.push(res.status);
    }
    return out;
  };

  it('two replicas behind a round-robin balancer admit the budget once, not once each', async () => {
    await withEdges({ perAddress: { perMinute: 6, burst: 4 }, perPrincipal: { perMinute: 6, burst: 4 }, replicas: () => 2 }, async (send) => {
      // In each replica's own memory with the whole budget, 8 of these passed.
      expect(await statusesOf(10, () => send('/public'))).toEqual([200, 200, 200, 200, 429, 429, 429, 429, 429, 429]);
      const refused = await send('/public');
      // A token every 10 s in all is one every 20 s at each replica.
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(Number(refused.headers.get('retry-after'))).toBeLessThanOrEqual(20);
    });
    await withEdges({ perPrincipal: { perMinute: 6, burst: 4 }, replicas: () => 2 }, async (send) => {
      const first = await send('/private');
      // The headers speak of the deployment's budget: the total, and what is left of it if spread evenly.
      expect(first.headers.get('x-ratelimit-limit')).toBe('6');
      expect(first.headers.get('x-ratelimit-remaining')).toBe('2');
      expect(await statusesOf(5, () => send('/private'))).toEqual([200, 200, 200, 429, 429]);
    });
  });
});

describe('dnsReplicaCount', () => {
  const settle = () => new Promise((r) => setImmediate(r));

  it('counts the addresses of a name in the background, at most once per refresh, keeping the last count on failure', async () => {
    let now = 0;
    let answer: () => Promise<number> = async () => 3;
    let lookups = 0;
    const errors: unknown[] = [];
    const replicas = dnsReplicaCount({
      name: 'gateway-peers',
      fallback: 2,
      refreshMs: 15_000,
      now: () => now,
      count: () => ((lookups += 1), answer()),
      onError: (err) => errors.push(err),
    });
    expect(replicas()).toBe(2);
    await settle();
    expect(replicas()).toBe(3);
    now += 14_999;
    answer = async () => 7;
    expect(replicas()).toBe(3);
    expect(lookups).toBe(1);
    now += 1;
    replicas();
    await settle();
    expect(replicas()).toBe(7);
    expect(lookups).toBe(2);
    // A failed lookup, or one naming no address (every pod unready for a moment), keeps the last count.
    now += 15_000;
    answer = async () => {
      throw new Error('SERVFAIL');
    };
    replicas();
    await settle();
    expect(replicas()).toBe(7);
    expect(errors).toHaveLength(1);
    now += 15_000;
    answer = async () => 0;
    replicas();
    await settle();
    expect(replicas()).toBe(7);
  });
});
