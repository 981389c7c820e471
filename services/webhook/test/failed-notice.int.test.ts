import type { NatsConnection } from '@nats-io/nats-core';
import { createPool, type Pool } from '@dam/db';
import { connectNats, DAM_INTERNAL, ensureStreams, noticeSubject, webhookFailedNoticeSchema } from '@dam/events';
import { createLogger } from '@dam/logging';
import { startOutboxRelay, type OutboxRelay } from '@dam/outbox';
import { createDatabase, startNats, waitFor, type TestNats } from '@dam/testing';
import { jetstream } from '@nats-io/jetstream';
import { DeliveryRepository } from '../src/adapters/delivery.repository';
import { migrateWebhook } from '../src/migrations';

// Login's notifications (issue 32): a delivery that gives up tells auth (dam.internal.notices.webhook-failed), written
// with the failure in its transaction and relayed by webhook's own identity.
/** A delivery the dispatcher took (wherever the repository declares its type). */
type DueDelivery = Awaited<ReturnType<DeliveryRepository['claimDue']>>[number];

let pool: Pool;
let repo: DeliveryRepository;
let nats: TestNats;
let service: NatsConnection;
let admin: NatsConnection;
let relay: OutboxRelay;

beforeAll(async () => {
  pool = createPool(await createDatabase('webhook_notices'));
  await migrateWebhook(pool);
  repo = new DeliveryRepository(pool);
  nats = await startNats();
  admin = await connectNats(nats.url, 'test-admin', nats.seed('admin'));
  await ensureStreams(admin);
  service = await connectNats(nats.url, 'webhook', nats.seed('webhook'));
  relay = startOutboxRelay({ pool, nc: service, logger: createLogger({ service: 'webhook-test', level: 'silent' }), intervalMs: 50 });
});
afterAll(async () => {
  await relay?.stop();
  await service?.close();
  await admin?.close();
  await nats?.stop();
  await pool?.end();
});

const notices = async () =>
  (await pool.query<{ payload: unknown }>('SELECT payload FROM outbox WHERE subject = $1 ORDER BY seq', [noticeSubject('webhook-failed')])).rows.map(
    (r) => r.payload,
  );

describe('webhook-failed notices', () => {
  it('one notice when a delivery gives up, none for a retry or a success, published as webhook', async () => {
    const url = 'https://hooks.example.com/dam';
    await repo.recordEvent({ id: 'evt-1', groupId: 3, assetId: 'a1', type: 'file-saved', time: new Date().toISOString(), seq: 1, creatorId: 7, body: '{}' }, [
      url,
    ]);
    await repo.recordEvent({ id: 'evt-2', groupId: 3, assetId: 'a2', type: 'file-saved', time: new Date().toISOString(), seq: 2, creatorId: 7, body: '{}' }, [
      url,
    ]);
    const claim = () => repo.claimDue({ limit: 10, perUrl: 10, perGroup: 10, runningByUrl: new Map(), runningByGroup: new Map(), leaseMs: 60_000 });
    const [first, second] = (await claim()) as [DueDelivery, DueDelivery];
    await repo.finishAttempt(first, { delivered: false, status: 500, durationMs: 1, retryInMs: 60_000 });
    await repo.finishAttempt(second, { delivered: true, status: 200, durationMs: 1 });
    expect(await notices()).toEqual([]);
    await pool.query('UPDATE deliveries SET next_attempt_at = now(), attempts = 7 WHERE id = $1', [first.id]);
    const [last] = (await claim()) as [DueDelivery];
    await repo.finishAttempt(last, { delivered: false, status: 503, durationMs: 1 });
    const [notice, ...more] = await notices();
    expect(more).toEqual([]);
    expect(webhookFailedNoticeSchema.parse(notice)).toEqual({
      id: `webhook-failed-${first.id}`,
      kind: 'webhook-failed',
      group_id: 3,
      url,
      attempts: 8,
      last_error: 'HTTP 503',
      event_type: 'file-saved',
      asset_id: 'a1',
      at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
    });
    // Relayed by webhook's own NATS identity onto DAM_INTERNAL.
    await waitFor(async () => (await pool.query('SELECT count(*)::int AS n FROM outbox WHERE published_at IS NULL')).rows[0].n === 0, {
      description: 'the notice relayed',
    });
    const stored = await (await jetstream(admin).streams.get(DAM_INTERNAL)).getMessage({ last_by_subj: noticeSubject('webhook-failed') });
    expect(stored?.json()).toMatchObject({ id: `webhook-failed-${first.id}`, url });
  });
});
