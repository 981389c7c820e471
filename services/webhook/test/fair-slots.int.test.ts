import http, { type Server } from 'node:http';
import { createPool, type Pool } from '@dam/db';
import { guardedPost } from '@dam/http';
import { createLogger } from '@dam/logging';
import { createDatabase, listen, scaled, waitFor } from '@dam/testing';
import { DUE_DELIVERIES_SQL } from '../src/adapters/autoscaling';
import { DeliveryRepository } from '../src/adapters/delivery.repository';
import { dispatchWorker } from '../src/consumers/dispatch.poller';
import type { LoggedEvent } from '../src/domain/delivery';
import { migrateWebhook } from '../src/migrations';

// Security review F9 (issue 30): delivery slots are shared fairly between groups. A tenant whose receivers accept
// and never answer held every slot of a replica (4 per URL, 10 URLs a group), each for a whole timeout, and every
// other tenant's deliveries waited behind them. Real PostgreSQL, real receivers on loopback, the real outbound POST.
let pool: Pool;
let repo: DeliveryRepository;
let n = 0;

beforeAll(async () => {
  pool = createPool(await createDatabase('webhook_fair'));
  await migrateWebhook(pool);
  repo = new DeliveryRepository(pool);
});
afterAll(async () => {
  await pool?.end();
});
beforeEach(async () => {
  await pool.query('TRUNCATE deliveries, delivery_attempts, events, asset_creators');
});

const event = (groupId: number, assetId: string): LoggedEvent => {
  n += 1;
  return { id: `evt-${n}`, groupId, assetId, type: 'file-saved', time: new Date().toISOString(), seq: n, creatorId: 1, body: `{"n":${n}}` };
};

/** A receiver on loopback that answers 200 at once, or accepts each request and never answers (a tarpit). */
async function receiver(kind: 'fast' | 'tarpit') {
  const got: number[] = [];
  const server: Server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      got.push(Date.now());
      if (kind === 'fast') res.end('ok');
    });
  });
  const base = await listen(server);
  return {
    url: `${base}/hook`,
    got,
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

describe('webhook delivery slots, fair per group (F9)', () => {
  it("delivers another group's events promptly while one group's receivers hold their requests open", async () => {
    // Small numbers, the production shape: 8 slots, 2 per URL, 4 per group; group 1 names 4 tarpit URLs (8 slots'
    // worth, all of them before) with a backlog on each, group 2 one fast receiver.
    const tarpitMs = 6_000;
    const timeoutMs = scaled(tarpitMs);
    const tarpits = await Promise.all([1, 2, 3, 4].map(() => receiver('tarpit')));
    const fast = await receiver('fast');
    for (let i = 0; i < 10; i++)
      await repo.recordEvent(
        event(1, `a${i}`),
        tarpits.map((t) => t.url),
      );
    const dispatcher = dispatchWorker({
      deliveries: repo,
      settings: async (groupId) => ({ urls: groupId === 1 ? tarpits.map((t) => t.url) : [fast.url], secrets: ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'] }),
      send: (url, headers, body) => guardedPost(url, { headers, body: Buffer.from(body), timeoutMs, allowHosts: ['127.0.0.1'] }),
      retryDelaysMs: [0, 0, 0, 0],
      timeoutMs,
      concurrency: 8,
      perUrlConcurrency: 2,
      perGroupConcurrency: 4,
      intervalMs: 50,
      clock: { now: () => new Date() },
      logger: createLogger({ service: 'webhook-test', level: 'silent' }),
    });
    const running = await dispatcher.worker.start();
    try {
      const held = () => tarpits.reduce((sum, t) => sum + t.got.length, 0);
      // Group 1's requests are open at its receivers: the slots it may hold are taken.
      await waitFor(async () => held() >= 4, { description: 'group 1 holding slots' });
      await new Promise((r) => setTimeout(r, scaled(200)));
      const t0 = Date.now();
      for (let i = 0; i < 3; i++) await repo.recordEvent(event(2, `b${i}`), [fast.url]);
      dispatcher.wake();
      await waitFor(async () => fast.got.length === 3, { timeoutMs: tarpitMs / 2, description: 'group 2 delivered' });
      const waited = Date.now() - t0;
      process.stdout.write(`group 2 waited ${waited} ms (one attempt of group 1: ${timeoutMs} ms)\n`);
      // Far less than one of group 1's attempts: group 2 did not wait for a slot group 1 held (it waited a whole
      // timeout before, about 6 s unscaled).
      expect(waited).toBeLessThan(timeoutMs / 4);
      // Group 1 is still stuck, with no more than its share in flight.
      expect(held()).toBeLessThanOrEqual(4);
      const { rows } = await pool.query<{ n: number }>("SELECT count(*)::int AS n FROM deliveries WHERE group_id = 1 AND status = 'pending'");
      expect(rows[0]?.n).toBe(40);
      // What the autoscaler reads (KEDA's postgresql trigger): group 1's due deliveries, though no event is unread.
      expect(Number((await pool.query<{ count: string }>(DUE_DELIVERIES_SQL)).rows[0]?.count)).toBe(40);
    } finally {
      await Promise.all(tarpits.map((t) => t.close()));
      await running.stop();
      await fast.close();
    }
  });

  it('takes the free slots round-robin across groups, not by age alone', async () => {
    // Group 1's backlog is older than anything of groups 2 and 3: each still gets its turn in one claim.
    for (let i = 0; i < 30; i++) await repo.recordEvent(event(1, `old${i}`), [`https://g1-${i % 5}.example/hook`]);
    await pool.query("UPDATE deliveries SET next_attempt_at = now() - interval '1 hour'");
    await repo.recordEvent(event(2, 'x'), ['https://g2.example/hook']);
    await repo.recordEvent(event(3, 'y'), ['https://g3.example/hook']);
    const limits = { perUrl: 4, runningByUrl: new Map<string, number>(), leaseMs: 60_000 };
    const first = await repo.claimDue({ ...limits, limit: 4, perGroup: 8, runningByGroup: new Map() });
    expect(first.map((d) => d.groupId).sort()).toEqual([1, 1, 2, 3]);
    // A group at its cap in this process gets nothing more; the others still do.
    await pool.query('UPDATE deliveries SET lease_until = NULL');
    const capped = await repo.claimDue({ ...limits, limit: 8, perGroup: 3, runningByGroup: new Map([[1, 2]]) });
    expect(capped.filter((d) => d.groupId === 1)).toHaveLength(1);
    expect(
      capped
        .map((d) => d.groupId)
        .filter((g) => g !== 1)
        .sort(),
    ).toEqual([2, 3]);
  });
});
