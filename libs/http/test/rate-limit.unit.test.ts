import { RateLimiter } from '../src/rate-limit';

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
