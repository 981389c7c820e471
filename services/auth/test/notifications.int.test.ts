import { jetstream } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { connectNats, DAM_INTERNAL, ensureStreams, noticeSubject, type JobFailedNotice, type WebhookFailedNotice } from '@dam/events';
import { createLogger } from '@dam/logging';
import { startNats, waitFor, type TestNats } from '@dam/testing';
import { jetstreamManager } from '@nats-io/jetstream';
import { NotificationRepository } from '../src/adapters/notification.repository';
import { pgAuthStore } from '../src/adapters/pg-store';
import { NOTICES_DURABLE, noticesWorker } from '../src/consumers/notices.consumer';
import { ADMIN, call, principalHeaders, startAuth, type TestAuth } from './harness';

// Login's `notifications` (the specification: "messages since last login"; issue 32): failed jobs (metadata's notices),
// disabled API keys (auth's own), webhooks that gave up (webhook's notices, for the users who manage settings).
let nats: TestNats;
let admin: NatsConnection;
let authNc: NatsConnection;
let auth: TestAuth;
let stopConsumer: () => Promise<void>;

const PASSWORD = 'password-123';
const users = { manager: 0, user: 0, other: 0 };

beforeAll(async () => {
  nats = await startNats();
  admin = await connectNats(nats.url, 'test-admin', nats.seed('admin'));
  await ensureStreams(admin);
  auth = await startAuth();
  // The consumer as auth's main.ts runs it, as the auth NATS identity.
  authNc = await connectNats(nats.url, 'auth', nats.seed('auth'));
  const consumer = await noticesWorker(authNc, pgAuthStore(auth.pool), createLogger({ service: 'auth-test', level: 'silent' })).start();
  stopConsumer = () => consumer.stop();
  for (const [name, role_id] of [
    ['manager', 2],
    ['user', 3],
    ['other', 3],
  ] as const) {
    const res = await call(`${auth.url}/api/v1/users`, 'POST', { email: `${name}@example.com`, password: PASSWORD, role_id }, principalHeaders(1, 1, 1));
    expect(res.status).toBe(201);
    users[name] = res.body.user_id;
  }
});
afterAll(async () => {
  await stopConsumer?.();
  await authNc?.close();
  await admin?.close();
  await auth?.close();
  await nats?.stop();
});

const notificationsOf = async (email: string, password = PASSWORD): Promise<string[]> => {
  const res = await call(`${auth.url}/api/v1/login`, 'POST', { email, password });
  expect(res.status).toBe(200);
  return res.body.notifications;
};
const adminNotifications = () => notificationsOf(ADMIN.email, ADMIN.password);

let n = 0;
/** Publishes a notice as its service would; every call a new Nats-Msg-Id, so JetStream stores a repeated id again. */
async function publish(notice: JobFailedNotice | WebhookFailedNotice, subject = noticeSubject(notice.kind)): Promise<number> {
  const ack = await jetstream(admin).publish(subject, JSON.stringify(notice), { msgID: `${notice.id}-${++n}` });
  return ack.seq;
}
/** Until auth's consumer has handled the message at `seq` (acknowledged: recorded or dropped). */
const handled = (seq: number) =>
  waitFor(async () => (await (await jetstreamManager(admin)).consumers.info(DAM_INTERNAL, NOTICES_DURABLE)).ack_floor.stream_seq >= seq, {
    description: `notice at ${seq} handled`,
  });

const jobFailed = (over: Partial<JobFailedNotice> = {}): JobFailedNotice => ({
  id: `job-failed-${++n}`,
  kind: 'job-failed',
  group_id: 1,
  user_id: users.user,
  job_id: 123,
  job_type: 'processing',
  asset_name: 'photo.jpg',
  asset_count: 1,
  error: 'the image could not be decoded',
  at: new Date().toISOString(),
  ...over,
});

describe("Login's notifications", () => {
  it('shows a failed job once, at the next login only, even when its notice arrives twice', async () => {
    expect(await notificationsOf('user@example.com')).toEqual([]);
    const notice = jobFailed();
    await publish(notice);
    // The same notice again (a redelivery, or a republish past JetStream's duplicate window): still one message.
    await handled(await publish(notice));
    expect(await notificationsOf('user@example.com')).toEqual(['Job 123 (processing of photo.jpg) failed: the image could not be decoded']);
    expect(await notificationsOf('user@example.com')).toEqual([]);
    // Only the user who asked for the job hears of it.
    expect(await notificationsOf('other@example.com')).toEqual([]);
  });

  it('returns only the messages since the previous login, in order', async () => {
    await handled(await publish(jobFailed({ job_id: 7, job_type: 'ingest', asset_name: 'remote.png', error: 'the source URL did not answer' })));
    await handled(await publish(jobFailed({ job_id: 8, job_type: 'bulk_delete', asset_name: null, asset_count: 12, error: null })));
    expect(await notificationsOf('user@example.com')).toEqual([
      'Job 7 (ingest of remote.png) failed: the source URL did not answer',
      'Job 8 (bulk delete of 12 assets) failed: no reason given',
    ]);
    await handled(await publish(jobFailed({ job_id: 9 })));
    expect(await notificationsOf('user@example.com')).toEqual(['Job 9 (processing of photo.jpg) failed: the image could not be decoded']);
  });

  it("drops a notice whose subject is another kind's, and one of another group's user", async () => {
    await handled(await publish(jobFailed({ job_id: 10 }), noticeSubject('webhook-failed')));
    await handled(await publish(jobFailed({ job_id: 11, group_id: 2 })));
    expect(await notificationsOf('user@example.com')).toEqual([]);
  });

  it('tells the users who manage settings of a webhook that gave up, one message per URL between logins, no secret in it', async () => {
    await adminNotifications();
    const start = Date.now();
    const failed = (last_error: string, secondsLater: number): WebhookFailedNotice => ({
      id: `webhook-failed-${++n}`,
      kind: 'webhook-failed',
      group_id: 1,
      url: 'https://hook-user:s3cret@hooks.example.com/dam?token=abc#x',
      attempts: 8,
      last_error,
      event_type: 'file-saved',
      asset_id: 'a1',
      at: new Date(start + secondsLater * 1000).toISOString(),
    });
    await publish(failed('HTTP 500', 0));
    await publish(failed('connect ECONNREFUSED', 2));
    await handled(await publish(failed('HTTP 502', 1)));
    const messages = await adminNotifications();
    expect(messages).toEqual([
      'Webhook https://hooks.example.com/dam failed 8 times; last error: connect ECONNREFUSED (and 2 more like it since your last login)',
    ]);
    expect(messages.join()).not.toMatch(/s3cret|token|abc/);
    expect(await adminNotifications()).toEqual([]);
    // MANAGE_SETTINGS is the ADMIN's alone: a MANAGER or USER is not told.
    expect(await notificationsOf('manager@example.com')).toEqual([]);
    expect(await notificationsOf('user@example.com')).toEqual([]);
  });

  it("tells a key's owner that another user disabled it, not one who disabled their own", async () => {
    // API keys are an ADMIN's (MANAGE_USERS): a second one owns these.
    const second = await call(`${auth.url}/api/v1/users`, 'POST', { email: 'second@example.com', password: PASSWORD, role_id: 1 }, principalHeaders(1, 1, 1));
    const asSecond = principalHeaders(second.body.user_id, 1, 1);
    const keyOf = async (name: string) => {
      const res = await call(`${auth.url}/api/v1/api_keys`, 'POST', { name, role: 'USER' }, asSecond);
      expect(res.status).toBe(201);
      return res.body.key_id as string;
    };
    const ci = await keyOf('ci');
    const own = await keyOf('own');
    expect(await notificationsOf('second@example.com')).toEqual([]);
    expect((await call(`${auth.url}/api/v1/api_keys/${ci}`, 'DELETE', undefined, principalHeaders(1, 1, 1))).status).toBe(200);
    expect((await call(`${auth.url}/api/v1/api_keys/${own}`, 'DELETE', undefined, asSecond)).status).toBe(200);
    expect(await notificationsOf('second@example.com')).toEqual(["API key 'ci' was disabled"]);
  });

  it('returns at most the newest 50, oldest first', async () => {
    await new NotificationRepository(auth.pool).add(Array.from({ length: 55 }, (_, i) => ({ userId: users.other, message: `message ${i}` })));
    const shown = await notificationsOf('other@example.com');
    expect(shown).toHaveLength(50);
    expect(shown[0]).toBe('message 5');
    expect(shown[49]).toBe('message 54');
    expect(await notificationsOf('other@example.com')).toEqual([]);
  });

  it('deletes messages past the retention, seen or not', async () => {
    const store = new NotificationRepository(auth.pool);
    await store.add([
      { userId: users.other, message: 'old' },
      { userId: users.other, message: 'recent' },
    ]);
    await auth.pool.query(`UPDATE user_notifications SET created_at = now() - interval '31 days' WHERE message = 'old' OR message LIKE 'message %'`);
    await auth.pool.query(`UPDATE consumed_notices SET consumed_at = now() - interval '31 days'`);
    expect(await store.prune(30)).toBe(56);
    expect((await auth.pool.query('SELECT count(*)::int AS n FROM consumed_notices')).rows[0].n).toBe(0);
    // A retention shorter than the stream keeps notices still keeps their ids (a redelivery stays one message).
    await auth.pool.query(`INSERT INTO consumed_notices (id, consumed_at) VALUES ('six-days', now() - interval '6 days')`);
    await store.prune(1);
    expect((await auth.pool.query(`SELECT id FROM consumed_notices`)).rows).toEqual([{ id: 'six-days' }]);
    expect(await notificationsOf('other@example.com')).toEqual(['recent']);
  });
});
