import { createLogger } from '@dam/logging';
import { attemptResult, type AttemptResult, type DueDelivery } from '../src/domain/delivery';
import type { ClaimLimits, DeliveryStore } from '../src/domain/ports';
import { SendingSlots } from '../src/domain/slots';
import { deliveryDispatch, type DispatchDeps } from '../src/use-cases/dispatch-deliveries.use-case';

/** The dispatch rules over in-memory ports: no PostgreSQL, no receivers, no timers (a clock moved by hand). */

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const logger = createLogger({ service: 'webhook-dispatch-test', level: 'silent' });

interface Row extends DueDelivery {
  seq: number;
  status: 'pending' | 'delivered' | 'failed';
  dueAt: number;
  leased: boolean;
  results: AttemptResult[];
}

/**
 * The store's contract (domain/ports.ts `claimDue`) on an array: of each asset and URL only the earliest pending
 * delivery, when due and not leased, within the claim's limits.
 */
function memoryStore(clock: { ms: number }) {
  const rows: Row[] = [];
  let seq = 0;
  const store: Pick<DeliveryStore, 'claimDue' | 'release' | 'finishAttempt'> & { add(assetId: string, url: string, groupId?: number): Row; rows: Row[] } = {
    rows,
    add(assetId, url, groupId = 7) {
      seq += 1;
      const row: Row = {
        id: seq,
        seq,
        assetId,
        url,
        groupId,
        webhookId: `msg_${seq}`,
        eventType: 'file-saved',
        attempts: 0,
        body: `{"n":${seq}}`,
        status: 'pending',
        dueAt: clock.ms,
        leased: false,
        results: [],
      };
      rows.push(row);
      return row;
    },
    async claimDue(l: ClaimLimits) {
      const byUrl = new Map(l.runningByUrl);
      const byGroup = new Map(l.runningByGroup);
      const taken: Row[] = [];
      const heads = new Set<string>();
      for (const r of rows) {
        const chain = `${r.assetId}\n${r.url}`;
        if (r.status !== 'pending' || heads.has(chain)) continue;
        heads.add(chain);
        if (r.leased || r.dueAt > clock.ms || taken.length >= l.limit) continue;
        if ((byUrl.get(r.url) ?? 0) >= l.perUrl || (byGroup.get(r.groupId) ?? 0) >= l.perGroup) continue;
        byUrl.set(r.url, (byUrl.get(r.url) ?? 0) + 1);
        byGroup.set(r.groupId, (byGroup.get(r.groupId) ?? 0) + 1);
        r.leased = true;
        taken.push(r);
      }
      return taken.map((r) => ({ ...r }));
    },
    async release(ids) {
      for (const r of rows) if (ids.includes(r.id)) r.leased = false;
    },
    async finishAttempt(d, result) {
      const r = rows.find((x) => x.id === d.id) as Row;
      r.attempts += 1;
      r.leased = false;
      r.results.push(result);
      r.status = result.delivered ? 'delivered' : result.retryInMs === undefined ? 'failed' : 'pending';
      r.dueAt = clock.ms + (result.retryInMs ?? 0);
    },
  };
  return store;
}

/** A receiver per URL whose answers the test gives one by one; every request waits for its answer. */
function receivers() {
  const waiting: Array<{ url: string; body: string; answer(status: number | Error): void }> = [];
  const sent: Array<{ url: string; body: string }> = [];
  const send: DispatchDeps['send'] = (url, _headers, body) =>
    new Promise((resolve, reject) => {
      sent.push({ url, body });
      waiting.push({ url, body, answer: (s) => (s instanceof Error ? reject(s) : resolve({ status: s })) });
    });
  /** Answers the oldest waiting request (of `url`, when given). */
  const answer = (status: number | Error, url?: string) => {
    const i = waiting.findIndex((w) => url === undefined || w.url === url);
    if (i < 0) throw new Error(`no request waiting${url ? ` for ${url}` : ''}`);
    const [w] = waiting.splice(i, 1);
    w?.answer(status);
  };
  return { send, sent, waiting, answer };
}

function setup(limits: Partial<Pick<DispatchDeps, 'concurrency' | 'perUrlConcurrency' | 'perGroupConcurrency' | 'retryDelaysMs'>> = {}) {
  const clock = { ms: Date.parse('2026-11-27T12:00:00Z') };
  const store = memoryStore(clock);
  const net = receivers();
  let freed = 0;
  const dispatch = deliveryDispatch({
    deliveries: store,
    settings: async () => ({ urls: ['http://u', 'http://v', 'http://w'], secrets: [SECRET] }),
    send: net.send,
    clock: { now: () => new Date(clock.ms) },
    retryDelaysMs: [0, 1000, 5000],
    timeoutMs: 1000,
    concurrency: 8,
    perUrlConcurrency: 8,
    perGroupConcurrency: 8,
    logger,
    onSlotFreed: () => void (freed += 1),
    ...limits,
  });
  /** Lets the attempts started so far reach their receiver, or record their answer. */
  const settle = () => new Promise((r) => setImmediate(r));
  return { clock, store, net, dispatch, settle, freed: () => freed };
}

describe('attemptResult (the retry schedule)', () => {
  const delays = [0, 1000, 5000];
  it('is delivered on 200, 201 and 202 only', () => {
    for (const status of [200, 201, 202]) expect(attemptResult({ status }, 0, delays, 5)).toEqual({ delivered: true, status, durationMs: 5 });
    expect(attemptResult({ status: 204 }, 0, delays, 5)).toEqual({
      delivered: false,
      status: 204,
      error: 'the receiver answered 204',
      durationMs: 5,
      retryInMs: 1000,
    });
  });
  it('retries after the next delay of the schedule, and fails for good when none is left', () => {
    expect(attemptResult({ error: 'refused' }, 0, delays, 1).retryInMs).toBe(1000);
    expect(attemptResult({ error: 'refused' }, 1, delays, 1).retryInMs).toBe(5000);
    expect(attemptResult({ error: 'refused' }, 2, delays, 1)).toEqual({ delivered: false, error: 'refused', durationMs: 1 });
  });
});

describe('SendingSlots', () => {
  it('holds each URL, each group and the total to their slots, and frees them', () => {
    const byUrl = new SendingSlots({ total: 10, perUrl: 2, perGroup: 10 });
    expect([
      byUrl.take({ url: 'u', groupId: 1 }),
      byUrl.take({ url: 'u', groupId: 2 }),
      byUrl.take({ url: 'u', groupId: 3 }),
      byUrl.take({ url: 'v', groupId: 1 }),
    ]).toEqual([true, true, false, true]);
    const byGroup = new SendingSlots({ total: 10, perUrl: 10, perGroup: 2 });
    expect([
      byGroup.take({ url: 'u', groupId: 1 }),
      byGroup.take({ url: 'v', groupId: 1 }),
      byGroup.take({ url: 'w', groupId: 1 }),
      byGroup.take({ url: 'w', groupId: 2 }),
    ]).toEqual([true, true, false, true]);
    const total = new SendingSlots({ total: 2, perUrl: 10, perGroup: 10 });
    expect([total.take({ url: 'u', groupId: 1 }), total.take({ url: 'v', groupId: 2 }), total.take({ url: 'w', groupId: 3 })]).toEqual([true, true, false]);
    expect(byUrl.claim()).toMatchObject({
      limit: 7,
      perUrl: 2,
      runningByUrl: new Map([
        ['u', 2],
        ['v', 1],
      ]),
      runningByGroup: new Map([
        [1, 2],
        [2, 1],
      ]),
    });
    byUrl.give({ url: 'u', groupId: 1 });
    expect(byUrl.take({ url: 'u', groupId: 3 })).toBe(true);
    expect(byUrl.claim()).toMatchObject({
      limit: 7,
      runningByUrl: new Map([
        ['u', 2],
        ['v', 1],
      ]),
      runningByGroup: new Map([
        [1, 1],
        [2, 1],
        [3, 1],
      ]),
    });
  });
});

describe('deliveryDispatch', () => {
  it('retries a failed delivery on the schedule, and fails it for good when no attempt is left', async () => {
    const w = setup();
    const row = w.store.add('a', 'http://u');
    for (const [answer, wait] of [
      [500, 1000],
      [new Error('connection refused'), 5000],
    ] as const) {
      await w.dispatch.round();
      await w.settle();
      w.net.answer(answer);
      await w.settle();
      expect(row.results.at(-1)).toMatchObject({ delivered: false, retryInMs: wait });
      // Not due before its delay.
      await w.dispatch.round();
      expect(w.net.waiting).toHaveLength(0);
      w.clock.ms += wait;
    }
    await w.dispatch.round();
    await w.settle();
    w.net.answer(503);
    await w.settle();
    expect(row.results.map((r) => r.error)).toEqual(['the receiver answered 500', 'connection refused', 'the receiver answered 503']);
    expect(row.status).toBe('failed');
    expect(w.net.sent).toHaveLength(3);
    expect(w.freed()).toBe(3);
  });

  it("sends an asset's events to one URL in order, the next only once the one before has ended", async () => {
    const w = setup();
    const [first, second, third] = [w.store.add('a', 'http://u'), w.store.add('a', 'http://u'), w.store.add('a', 'http://u')];
    const other = w.store.add('b', 'http://u');
    await w.dispatch.round();
    await w.settle();
    // One per asset and URL at a time: a's first and b's, never a's second beside its first.
    expect(w.net.waiting.map((x) => x.body)).toEqual([first?.body, other.body]);
    w.net.answer(500, 'http://u');
    w.net.answer(200, 'http://u');
    await w.settle();
    await w.dispatch.round();
    // The first is pending again (a retry, 1 s away): the second still waits behind it.
    expect(w.net.waiting).toHaveLength(0);
    w.clock.ms += 1000;
    for (const expected of [first, second, third]) {
      await w.dispatch.round();
      await w.settle();
      expect(w.net.waiting.map((x) => x.body)).toEqual([expected?.body]);
      w.net.answer(200);
      await w.settle();
    }
    expect(w.net.sent.map((s) => s.body)).toEqual([first?.body, other.body, first?.body, second?.body, third?.body]);
  });

  it('holds a slow URL to its slots, and its group to its share, while other URLs and groups go on', async () => {
    const w = setup({ concurrency: 4, perUrlConcurrency: 2, perGroupConcurrency: 3 });
    for (let i = 0; i < 5; i++) w.store.add(`slow${i}`, 'http://u', 1);
    w.store.add('x', 'http://v', 1);
    w.store.add('y', 'http://v', 1);
    w.store.add('z', 'http://w', 2);
    await w.dispatch.round();
    await w.settle();
    const inFlight = () => w.net.waiting.map((x) => x.url).sort();
    // u at its 2 slots, group 1 at its 3 (u, u, v), group 2 in the last one.
    expect(inFlight()).toEqual(['http://u', 'http://u', 'http://v', 'http://w']);
    w.net.answer(200, 'http://w');
    w.net.answer(200, 'http://v');
    await w.settle();
    await w.dispatch.round();
    await w.settle();
    // v's second goes out, the slow u is still held to 2 though slots are free.
    expect(inFlight()).toEqual(['http://u', 'http://u', 'http://v']);
  });

  it('keeps running when an attempt cannot be recorded (PostgreSQL away): logged, no unhandled rejection', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const w = setup();
      w.store.add('a', 'http://u');
      w.store.finishAttempt = async () => {
        throw new Error('connection terminated');
      };
      await w.dispatch.round();
      await w.settle();
      w.net.answer(200);
      await w.settle();
      await new Promise((r) => setImmediate(r));
      expect(unhandled).toEqual([]);
      // Its slot is free again: the next round may take it (once its lease has run out, in the real store).
      expect(w.freed()).toBe(1);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it('gives back what a round takes after stop, and stop waits for the attempts in flight', async () => {
    const w = setup();
    w.store.add('a', 'http://u');
    w.store.add('b', 'http://u');
    await w.dispatch.round();
    await w.settle();
    let stopped = false;
    const stopping = w.dispatch.stop().then(() => (stopped = true));
    await w.settle();
    expect(stopped).toBe(false);
    w.net.answer(200);
    w.net.answer(200);
    await stopping;
    w.store.add('c', 'http://u');
    await w.dispatch.round();
    expect(w.net.sent).toHaveLength(2);
  });
});
