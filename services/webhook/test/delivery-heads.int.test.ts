import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { createPool, type Pool, type PoolClient } from '@dam/db';
import { createDatabase, scaled } from '@dam/testing';
import { CLAIM_DUE_SQL, claimDueParams, DeliveryRepository } from '../src/adapters/delivery.repository';
import type { DueDelivery, LoggedEvent } from '../src/domain/delivery';
import { migrateWebhook } from '../src/migrations';

// The dispatcher's query against real PostgreSQL: only the head of each asset's pending deliveries to one URL goes
// out, heads are handed on when a delivery ends, and the query reads the heads, not every pending delivery.
let databaseUrl: string;
let pool: Pool;
let repo: DeliveryRepository;
let n = 0;

beforeAll(async () => {
  databaseUrl = await createDatabase('webhook_heads');
  pool = createPool(databaseUrl);
  await migrateWebhook(pool);
  repo = new DeliveryRepository(pool);
});
afterAll(async () => {
  await pool?.end();
});
beforeEach(async () => {
  await pool.query('TRUNCATE deliveries, delivery_attempts, events, asset_creators');
});

const event = (assetId: string, seq: number): LoggedEvent => {
  n += 1;
  return { id: `evt-${n}`, groupId: 1, assetId, type: 'file-saved', time: new Date().toISOString(), seq, creatorId: 7, body: `{"n":${n}}` };
};
const limits = (limit = 50, perUrl = 50) => ({
  limit,
  perUrl,
  perGroup: 1000,
  runningByUrl: new Map<string, number>(),
  runningByGroup: new Map<number, number>(),
  leaseMs: 60_000,
});
const claim = (limit = 50, perUrl = 50): Promise<DueDelivery[]> => repo.claimDue(limits(limit, perUrl));
const seqOf = async (d: DueDelivery): Promise<number> =>
  Number((await pool.query<{ seq: string }>('SELECT seq FROM deliveries WHERE id = $1', [d.id])).rows[0]?.seq);
const delivered = (d: DueDelivery) => repo.finishAttempt(d, { delivered: true, status: 200, durationMs: 1 });

/** Pending deliveries marked head that are not their chain's lowest seq, and chain heads left unmarked. */
async function headProblems(): Promise<{ unmarked: number; wrong: number }> {
  const { rows } = await pool.query<{ unmarked: number; wrong: number }>(
    `SELECT count(*) FILTER (WHERE NOT head AND first) ::int AS unmarked, count(*) FILTER (WHERE head AND NOT first)::int AS wrong
     FROM (SELECT head, seq = min(seq) OVER (PARTITION BY url, asset_id) AS first FROM deliveries WHERE status = 'pending') x`,
  );
  return rows[0] as { unmarked: number; wrong: number };
}

describe('the head of each asset and URL (webhook dispatcher)', () => {
  it("sends an asset's events to a URL in seq order, also when the later one was recorded first", async () => {
    await repo.recordEvent(event('a', 5), ['http://r/1']);
    expect((await claim()).length).toBe(1);
    await pool.query('UPDATE deliveries SET lease_until = NULL');
    await repo.recordEvent(event('a', 3), ['http://r/1']);
    const first = await claim();
    expect(await Promise.all(first.map(seqOf))).toEqual([3]);
    expect(await claim()).toEqual([]);
    await delivered(first[0] as DueDelivery);
    const second = await claim();
    expect(await Promise.all(second.map(seqOf))).toEqual([5]);
    expect(await headProblems()).toEqual({ unmarked: 0, wrong: 0 });
  });

  it('keeps the head through retries and hands it on when the delivery fails for good', async () => {
    await repo.recordEvent(event('b', 1), ['http://r/1', 'http://r/2']);
    await repo.recordEvent(event('b', 2), ['http://r/1', 'http://r/2']);
    const heads = await claim();
    expect(heads.map((d) => d.url).sort()).toEqual(['http://r/1', 'http://r/2']);
    const one = heads.find((d) => d.url === 'http://r/1') as DueDelivery;
    const two = heads.find((d) => d.url === 'http://r/2') as DueDelivery;
    // A retry in a minute: nothing behind it goes meanwhile.
    await repo.finishAttempt(one, { delivered: false, status: 500, durationMs: 1, retryInMs: 60_000 });
    await repo.finishAttempt(two, { delivered: false, error: 'gone', durationMs: 1 });
    const next = await claim();
    expect(next.map((d) => d.url)).toEqual(['http://r/2']);
    expect(await seqOf(next[0] as DueDelivery)).toBe(2);
    expect(await headProblems()).toEqual({ unmarked: 0, wrong: 0 });
  });

  it('puts reissued deliveries into the chains in seq order', async () => {
    await repo.recordEvent(event('c', 1), ['http://r/1']);
    await repo.recordEvent(event('c', 2), ['http://r/1']);
    await delivered((await claim())[0] as DueDelivery);
    await delivered((await claim())[0] as DueDelivery);
    await repo.recordEvent(event('c', 3), ['http://r/1']);
    const reissued = await repo.reissue({
      groupId: 1,
      userId: 7,
      from: new Date(Date.now() - 60_000).toISOString(),
      to: new Date(Date.now() + 60_000).toISOString(),
      jobId: 9,
      urls: ['http://r/1'],
    });
    expect(reissued).toBe(3);
    const order: number[] = [];
    for (let i = 0; i < 5; i++) {
      const due = await claim();
      order.push(...(await Promise.all(due.map(seqOf))));
      await Promise.all(due.map(delivered));
    }
    // The reissue of 1 and 2, then 3 and its reissue together (same seq, so neither waits for the other).
    expect(order).toEqual([1, 2, 3, 3]);
    expect(await headProblems()).toEqual({ unmarked: 0, wrong: 0 });
  });

  it(
    'never leaves a chain without its head when events are recorded and deliveries end at once',
    async () => {
      const urls = ['http://r/1', 'http://r/2'];
      const assets = ['p', 'q', 'r'];
      const sent: Array<{ key: string; seq: number }> = [];
      // Seqs 1-40 per asset recorded in a shuffled order by 8 writers while 4 dispatch loops send what is due.
      const pendingEvents = assets.flatMap((a) => Array.from({ length: 40 }, (_, i) => ({ a, seq: i + 1 })));
      for (let i = pendingEvents.length - 1; i > 0; i--) {
        const j = (i * 7919 + 13) % (i + 1);
        [pendingEvents[i], pendingEvents[j]] = [pendingEvents[j] as (typeof pendingEvents)[number], pendingEvents[i] as (typeof pendingEvents)[number]];
      }
      let recording = true;
      const writers = Array.from({ length: 8 }, async () => {
        for (let e = pendingEvents.pop(); e; e = pendingEvents.pop()) await repo.recordEvent(event(e.a, e.seq), urls);
      });
      const loops = Array.from({ length: 4 }, async () => {
        for (;;) {
          const due = await claim(5, 5);
          if (due.length === 0) {
            if (!recording && (await pool.query("SELECT 1 FROM deliveries WHERE status = 'pending' LIMIT 1")).rowCount === 0) return;
            await new Promise((r) => setTimeout(r, 5));
            continue;
          }
          for (const d of due) {
            sent.push({ key: `${d.url} ${d.assetId}`, seq: await seqOf(d) });
            await delivered(d);
          }
        }
      });
      await Promise.all(writers);
      recording = false;
      await Promise.all(loops);
      expect(sent.length).toBe(urls.length * assets.length * 40);
      // Order is only promised for what was recorded before it was sent: here every chain's seqs are checked to
      // have gone out once each, and heads were never lost (the loops would not have ended).
      const byChain = new Map<string, number[]>();
      for (const s of sent) byChain.set(s.key, [...(byChain.get(s.key) ?? []), s.seq]);
      for (const seqs of byChain.values()) expect([...seqs].sort((x, y) => x - y)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
      expect(await headProblems()).toEqual({ unmarked: 0, wrong: 0 });
    },
    scaled(60_000),
  );

  it('hands the head on to a later event recorded while an earlier one of its asset was sent and ended', async () => {
    // The later event (a deletion: no creator to upsert, so nothing else orders the two) finds its chain empty,
    // the earlier one is recorded meanwhile, and that one goes out and ends before the later one commits. Each
    // transaction must see the other: the later delivery is then the chain's head and goes out too (it stayed
    // pending for ever, unmarked, when each decided the head alone).
    const url = 'http://r/1';
    const beforeHeads = gate();
    const beforeCommit = gate();
    const held = createPool(databaseUrl, { max: 1 });
    try {
      const { creatorId: _creator, ...deletion } = event('w', 2);
      const later = new DeliveryRepository(
        pausing(held, [
          { sql: /^UPDATE deliveries d SET head/, gate: beforeHeads },
          { sql: /^COMMIT$/, gate: beforeCommit },
        ]),
      ).recordEvent(deletion, [url]);
      await beforeHeads.reached;
      const earlier = repo.recordEvent(event('w', 1), [url]);
      // Recorded at once, or held until the later one is done: either way the later one goes on now.
      await Promise.race([earlier, sleep(300)]);
      beforeHeads.open();
      await beforeCommit.reached;
      // What is due now goes out and ends, as the dispatcher would, while the later event is still uncommitted.
      const ended = Promise.all(
        (await claim()).map(async (d) => {
          const seq = await seqOf(d);
          await delivered(d);
          return seq;
        }),
      );
      await Promise.race([ended, sleep(300)]);
      beforeCommit.open();
      await Promise.all([later, earlier]);
      const sent = await ended;
      for (let i = 0; i < 4; i++) {
        const due = await claim();
        sent.push(...(await Promise.all(due.map(seqOf))));
        await Promise.all(due.map(delivered));
      }
      expect(sent).toEqual([1, 2]);
      expect(await headProblems()).toEqual({ unmarked: 0, wrong: 0 });
    } finally {
      await held.end();
    }
  });

  it('marks again, on migrating, a chain head lost before chains were locked', async () => {
    await repo.recordEvent(event('v', 1), ['http://r/1']);
    await repo.recordEvent(event('v', 2), ['http://r/1']);
    await delivered((await claim())[0] as DueDelivery);
    // What the lost hand-over left: the one pending delivery of its chain, unmarked.
    await pool.query("UPDATE deliveries SET head = false WHERE asset_id = 'v'");
    expect(await claim()).toEqual([]);
    await pool.query(await readFile(path.join(__dirname, '../src/migrations/003_repair_heads.sql'), 'utf8'));
    expect(await Promise.all((await claim()).map(seqOf))).toEqual([2]);
    expect(await headProblems()).toEqual({ unmarked: 0, wrong: 0 });
  });

  it('reads the heads only, not the deliveries queued behind them', async () => {
    // A receiver that is down: 2,000 assets whose head waits for its next retry, 10 more events each behind it.
    await pool.query(
      `INSERT INTO events (id, group_id, asset_id, type, time, seq, body)
       SELECT 'bulk-' || a || '-' || s, 1, 'asset-' || a, 'file-saved', now(), s, '{}' FROM generate_series(1, 2000) a, generate_series(1, 11) s`,
    );
    await pool.query(
      `INSERT INTO deliveries (webhook_id, group_id, event_id, event_type, asset_id, url, seq, head, next_attempt_at)
       SELECT id, 1, id, type, asset_id, 'http://dead/hook', seq, seq = 1, CASE WHEN seq = 1 THEN now() + interval '1 hour' ELSE now() END FROM events`,
    );
    await pool.query('ANALYZE deliveries');
    expect(await claim()).toEqual([]);
    // One asset's head is due again: it alone is taken.
    await pool.query("UPDATE deliveries SET next_attempt_at = now() WHERE asset_id = 'asset-17' AND seq = 1");
    const due = await claim();
    expect(due.map((d) => [d.assetId, d.url])).toEqual([['asset-17', 'http://dead/hook']]);
    await pool.query('UPDATE deliveries SET lease_until = NULL');
    // The rows the claim reads from `deliveries`, from its executed plan (in a transaction rolled back). Before
    // heads were kept it read every pending delivery twice (44,000 here).
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      const plan = await client.query<{ 'QUERY PLAN': unknown }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${CLAIM_DUE_SQL}`, claimDueParams(limits()));
      expect(rowsRead(plan.rows[0]?.['QUERY PLAN'], 'deliveries')).toBeLessThan(100);
    } finally {
      await client.query('ROLLBACK');
      client.release();
    }
  });
});

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** A point a transaction stops at until the test opens it. */
interface Gate {
  reached: Promise<void>;
  arrive(): void;
  opened: Promise<void>;
  open(): void;
}

function gate(): Gate {
  let arrive = () => undefined as void;
  let open = () => undefined as void;
  const reached = new Promise<void>((resolve) => (arrive = resolve));
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { reached, arrive, opened, open };
}

/** `pool`, whose clients stop before the first statement matching each gate's `sql` until that gate is opened. */
function pausing(pool: Pool, gates: Array<{ sql: RegExp; gate: Gate }>): Pool {
  const waiting = [...gates];
  const connect = pool.connect.bind(pool) as () => Promise<PoolClient>;
  const paused = async (): Promise<PoolClient> => {
    const client = await connect();
    const query = client.query.bind(client) as (...args: unknown[]) => Promise<unknown>;
    const stopping = async (...args: unknown[]): Promise<unknown> => {
      const text = typeof args[0] === 'string' ? args[0] : String((args[0] as { text?: unknown }).text ?? '');
      const at = waiting.findIndex((g) => g.sql.test(text.trim()));
      if (at >= 0) {
        const [{ gate: g }] = waiting.splice(at, 1) as [{ sql: RegExp; gate: Gate }];
        g.arrive();
        await g.opened;
      }
      return query(...args);
    };
    return Object.assign(client, { query: stopping });
  };
  return Object.assign(pool, { connect: paused });
}

/** Rows a plan read from `relation` (returned times loops, plus those its filters removed). */
function rowsRead(plan: unknown, relation: string): number {
  let total = 0;
  const visit = (node: Record<string, unknown>) => {
    if (node['Relation Name'] === relation) {
      total += ((node['Actual Rows'] as number) + ((node['Rows Removed by Filter'] as number | undefined) ?? 0)) * ((node['Actual Loops'] as number) ?? 1);
    }
    for (const child of (node['Plans'] as Array<Record<string, unknown>> | undefined) ?? []) visit(child);
  };
  for (const root of plan as Array<{ Plan: Record<string, unknown> }>) visit(root.Plan);
  return total;
}
