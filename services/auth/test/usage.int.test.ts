import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { connectNats, DAM_INTERNAL, ensureStreams, usageSubject, type UsageRecord } from '@dam/events';
import { createLogger } from '@dam/logging';
import { startNats, waitFor, type TestNats } from '@dam/testing';
import { UsageRepository } from '../src/adapters/usage.repository';
import { USAGE_DURABLE, usageWorker } from '../src/consumers/usage.consumer';
import { call, principalHeaders, startAuth, type TestAuth } from './harness';

let nats: TestNats;
let admin: NatsConnection;
let authNc: NatsConnection;
let auth: TestAuth;
let stopConsumer: () => Promise<void>;

beforeAll(async () => {
  nats = await startNats();
  admin = await connectNats(nats.url, 'test-admin', nats.seed('admin'));
  await ensureStreams(admin);
  auth = await startAuth();
  // The consumer as auth's main.ts runs it, as the auth NATS identity.
  authNc = await connectNats(nats.url, 'auth', nats.seed('auth'));
  const consumer = await usageWorker(authNc, new UsageRepository(auth.pool), createLogger({ service: 'auth-test', level: 'silent' })).start();
  stopConsumer = () => consumer.stop();
});
afterAll(async () => {
  await stopConsumer?.();
  await authNc?.close();
  await admin?.close();
  await auth?.close();
  await nats?.stop();
});

const admin1 = principalHeaders(1, 1, 1);
let n = 0;
async function publish(r: Partial<UsageRecord> & Pick<UsageRecord, 'metric' | 'value' | 'start'>, id = `r-${++n}`): Promise<void> {
  const record = { id, group_id: '1', user_id: 1, end: r.start, ...r };
  await jetstream(admin).publish(usageSubject(r.metric), JSON.stringify(record), { msgID: `${id}-${Math.random()}` });
}
const usage = (query: string, headers = admin1) => call(`${auth.url}/api/v1/usage/${query}`, 'GET', undefined, headers);

describe('usage statistics (CONTRACT §9)', () => {
  it('adds up counters per bucket, per user on request, and counts a record delivered twice once', async () => {
    await publish({ metric: 'api_requests', value: 3, start: '2026-11-20T10:05:00Z' });
    await publish({ metric: 'api_requests', value: 4, start: '2026-11-20T10:55:00Z', user_id: 2 });
    await publish({ metric: 'api_requests', value: 5, start: '2026-11-20T12:10:00Z' });
    await publish({ metric: 'api_requests', value: 5, start: '2026-11-20T12:10:00Z' }, 'r-3'); // r-3 again: a redelivery
    await publish({ metric: 'api_requests', value: 100, start: '2026-11-20T11:00:00Z', group_id: '2' });
    await publish({ metric: 'transcode_seconds', value: 12.5, start: '2026-11-20T10:00:00Z' });
    const range = 'from=2026-11-20T10:00:00Z&to=2026-11-20T13:00:00Z';
    await waitFor(async () => (await usage(`api_requests?${range}`)).body.total === 12, { description: 'the records counted' });
    const all = await usage(`api_requests?${range}`);
    expect(all).toMatchObject({
      status: 200,
      body: { metric: 'api_requests', from: '2026-11-20T10:00:00.000Z', to: '2026-11-20T13:00:00.000Z', period: '1h', total: 12 },
    });
    expect(all.body.series).toEqual([
      { start: '2026-11-20T10:00:00.000Z', value: 7 },
      { start: '2026-11-20T11:00:00.000Z', value: 0 },
      { start: '2026-11-20T12:00:00.000Z', value: 5 },
    ]);
    expect((await usage(`api_requests?${range}&user_id=2`)).body.total).toBe(4);
    expect((await usage(`api_requests?${range}&period=24h`)).body.series).toEqual([{ start: '2026-11-20T00:00:00.000Z', value: 12 }]);
    // Dates alone are midnight UTC.
    expect((await usage('api_requests?from=2026-11-20&to=2026-11-21&period=24h')).body).toMatchObject({ from: '2026-11-20T00:00:00.000Z', total: 12 });
    expect((await usage(`transcode_seconds?${range}`)).body.total).toBe(12.5);
    expect((await usage(`addon_runs?${range}`)).body.total).toBe(0);
  });

  it('shows storage as the latest snapshot before each bucket ends', async () => {
    await publish({ metric: 'storage_bytes', value: 1000, start: '2026-11-21T01:00:00Z' });
    await publish({ metric: 'storage_bytes', value: 500, start: '2026-11-21T01:00:00Z', user_id: 2 });
    // The next day's snapshot: user 2 has nothing left (absent), user 1 more.
    await publish({ metric: 'storage_bytes', value: 3000, start: '2026-11-22T01:00:00Z' });
    const range = 'from=2026-11-21T00:00:00Z&to=2026-11-23T00:00:00Z&period=24h';
    await waitFor(async () => (await usage(`storage_bytes?${range}`)).body.total === 3000, { description: 'the snapshots' });
    expect((await usage(`storage_bytes?${range}`)).body.series).toEqual([
      { start: '2026-11-21T00:00:00.000Z', value: 1500 },
      { start: '2026-11-22T00:00:00.000Z', value: 3000 },
    ]);
    expect((await usage(`storage_bytes?${range}&user_id=2`)).body.series.map((b: { value: number }) => b.value)).toEqual([500, 0]);
  });

  it('answers defaults, unknown metrics, wrong ranges and callers without VIEW_USAGE as the contract says', async () => {
    const last = await usage('cdn_bytes');
    expect(last.status).toBe(200);
    expect(Date.parse(last.body.to) - Date.parse(last.body.from)).toBe(86_400_000);
    expect(last.body.series.length).toBeGreaterThanOrEqual(24);
    expect((await usage('nonsense')).status).toBe(404);
    expect((await usage('nonsense')).body.error.code).toBe('METRIC_NOT_FOUND');
    expect((await usage('api_requests?from=2025-01-01T00:00:00Z&to=2026-01-01T00:00:00Z')).status).toBe(400);
    expect((await usage('api_requests?from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z')).status).toBe(400);
    expect((await usage('api_requests?period=1m')).status).toBe(400);
    expect((await usage('api_requests', principalHeaders(5, 1, 3))).status).toBe(403);
  });

  it("counts a record only under its subject's metric: the gateway's subject cannot carry cdn_bytes (F16)", async () => {
    // The gateway may publish dam.internal.usage.api_requests only; a record there naming another metric is dropped.
    const forged = { id: 'forged-1', metric: 'cdn_bytes', group_id: '1', user_id: 1, value: 1e12, start: '2026-11-24T10:00:00Z', end: '2026-11-24T10:00:00Z' };
    const { seq } = await jetstream(admin).publish(usageSubject('api_requests'), JSON.stringify(forged), { msgID: 'forged-1' });
    await publish({ metric: 'api_requests', value: 2, start: '2026-11-24T10:00:00Z' });
    const jsm = await jetstreamManager(admin);
    await waitFor(async () => (await jsm.consumers.info(DAM_INTERNAL, USAGE_DURABLE)).ack_floor.stream_seq > seq, { description: 'both records handled' });
    const range = 'from=2026-11-24T00:00:00Z&to=2026-11-25T00:00:00Z&period=24h';
    expect((await usage(`api_requests?${range}`)).body.total).toBe(2);
    expect((await usage(`cdn_bytes?${range}`)).body.total).toBe(0);
  });
});
