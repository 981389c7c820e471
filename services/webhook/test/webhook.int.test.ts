/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are untyped JSON; the assertions check them */
import http, { type IncomingHttpHeaders, type Server } from 'node:http';
import { randomBytes } from 'node:crypto';
import { jetstream } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { Webhook } from 'standardwebhooks';
import { permissionsFor, ROLE_NAMES, type Principal } from '@dam/auth-tokens';
import { assetEventSubject, connectNats, ensureStreams, jobCommandSubject, jobReportSubject } from '@dam/events';
import {
  createDatabase,
  listen,
  serviceIdentities,
  startNats,
  startServiceProcess,
  startSettingsStub,
  waitFor,
  type InternalStub,
  type ServiceProcess,
  type TestNats,
} from '@dam/testing';

const identities = serviceIdentities();
let nats: TestNats;
let admin: NatsConnection;
let stub: InternalStub;
let service: ServiceProcess;
let env: Record<string, string>;

/** What each group's settings say (the stub answers from here). */
const groupSettings = new Map<string, { urls: string[]; secret: string; previous_secret?: string; previous_secret_expires_at?: string }>();
/** Groups whose first settings lookup answers late (600 ms). */
const slowFirstLookup = new Set<string>();
const secret = () => `whsec_${randomBytes(24).toString('base64')}`;

interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
}
/** A receiver on loopback: answers each request with what `answer` says (a status, or 'hang'). */
async function receiver(answer: (n: number, r: Received) => number | 'hang' = () => 200) {
  const got: Received[] = [];
  const server: Server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r = { headers: req.headers, body: Buffer.concat(chunks).toString(), at: Date.now() };
      got.push(r);
      const a = answer(got.length, r);
      if (a === 'hang') return;
      res.statusCode = a;
      res.end('ok');
    });
  });
  const url = await listen(server);
  return { url: `${url}/hook`, got, close: () => new Promise((r) => server.close(r)) };
}

let seq = 0;
/** Publishes one asset event as metadata would. */
async function publish(groupId: number, type: 'file-saved' | 'file-processed' | 'file-deleted', assetId: string, data: Record<string, unknown>) {
  seq += 1;
  const env = {
    id: `evt-${randomBytes(8).toString('hex')}`,
    type,
    time: new Date().toISOString(),
    group_id: String(groupId),
    asset_id: assetId,
    version: seq,
    data,
  };
  await jetstream(admin).publish(assetEventSubject(groupId, type), JSON.stringify(env), { msgID: env.id });
  return env;
}
const assetData = (id: string, creator = 1) => ({ id, status: 'NOT_READY', name: `${id}.txt`, creator_id: creator, size: 1, metadata: {}, data: {} });

async function log(groupId: number, query = '') {
  const p: Principal = { user_id: 1, group_id: groupId, role_id: 1, role_name: ROLE_NAMES[1] ?? 'ADMIN', permissions: permissionsFor(1), via: 'jwt' };
  const path = `/api/v1/webhooks/deliveries${query}`;
  const res = await fetch(`${service.url}${path}`, { headers: identities.headers('gateway', { audience: 'webhook', method: 'GET', path, principal: p }) });
  return { status: res.status, body: (await res.json()) as any };
}

beforeAll(async () => {
  nats = await startNats();
  admin = await connectNats(nats.url, 'test-admin', nats.seed('admin'));
  await ensureStreams(admin);
  stub = await startSettingsStub(
    identities,
    (groupId, call) => ({
      status: 200,
      body: { webhooks: groupSettings.get(groupId) ?? { urls: [], secret: secret() } },
      ...(call === 1 && slowFirstLookup.has(groupId) ? { delayMs: 600 } : {}),
    }),
    ['webhook'],
  );
  env = {
    ...nats.env('webhook'),
    ...identities.env('webhook'),
    DATABASE_URL: await createDatabase('webhook'),
    AUTH_URL: stub.url,
    // The stub announces no settings change: read them fresh, as tests change them between events.
    SETTINGS_MAX_AGE_MS: '0',
    WEBHOOK_ALLOW_HOSTS: '127.0.0.1',
    WEBHOOK_RETRY_DELAYS_MS: '0,300,300,300,300,300,300,300',
    WEBHOOK_TIMEOUT_MS: '1500',
    DISPATCH_INTERVAL_MS: '100',
  };
  service = await startServiceProcess('webhook', env);
});
afterAll(async () => {
  await service?.stop();
  await stub?.close();
  await admin?.close();
  await nats?.stop();
});

describe('webhook deliveries (CONTRACT §10)', () => {
  it('signs each delivery so the Standard Webhooks library accepts it, and sends the payload as the event carries it', async () => {
    const r = await receiver();
    const s = secret();
    groupSettings.set('1', { urls: [r.url], secret: s });
    const e = await publish(1, 'file-saved', 'a1', assetData('a1'));
    await waitFor(async () => r.got.length === 1, { description: 'one delivery' });
    const [got] = r.got;
    expect(got!.headers['x-asset-event']).toBe('file-saved');
    expect(got!.headers['content-type']).toBe('application/json');
    expect(got!.headers['webhook-id']).toBe(e.id);
    expect(JSON.parse(got!.body)).toEqual(e.data);
    expect(new Webhook(s).verify(got!.body, got!.headers as Record<string, string>)).toEqual(e.data);
    expect(() => new Webhook(secret()).verify(got!.body, got!.headers as Record<string, string>)).toThrow();
    await r.close();
  });

  it('retries a failing receiver on the schedule with the same webhook-id, and logs every attempt', async () => {
    const r = await receiver((n) => (n < 3 ? 500 : 202));
    groupSettings.set('2', { urls: [r.url], secret: secret() });
    await publish(2, 'file-saved', 'b1', assetData('b1'));
    await waitFor(async () => r.got.length === 3, { description: 'three attempts' });
    expect(new Set(r.got.map((g) => g.headers['webhook-id'])).size).toBe(1);
    await waitFor(async () => (await log(2, '?status=delivered')).body.total === 1, { description: 'delivered in the log' });
    const entry = (await log(2)).body.items[0];
    expect(entry).toMatchObject({
      event: 'file-saved',
      asset_id: 'b1',
      url: r.url,
      status: 'delivered',
      attempt_count: 3,
      response_code: 202,
      next_retry_at: null,
    });
    expect(entry.attempts.map((a: any) => a.response_code)).toEqual([500, 500, 202]);
    expect((await log(2, '?status=bogus')).status).toBe(400);
    await r.close();
  });

  it('gives up after eight attempts and logs the delivery as failed', async () => {
    const r = await receiver(() => 503);
    groupSettings.set('3', { urls: [r.url], secret: secret() });
    await publish(3, 'file-saved', 'c1', assetData('c1'));
    await waitFor(async () => (await log(3, '?status=failed')).body.total === 1, { timeoutMs: 15_000, description: 'failed for good' });
    expect(r.got).toHaveLength(8);
    expect((await log(3)).body.items[0]).toMatchObject({ status: 'failed', attempt_count: 8, response_code: 503 });
  });

  it("delivers an asset's file-saved before its file-processed to each URL, even when the first needs a retry", async () => {
    const r = await receiver((n) => (n === 1 ? 500 : 200));
    groupSettings.set('4', { urls: [r.url], secret: secret() });
    await publish(4, 'file-saved', 'd1', assetData('d1'));
    await publish(4, 'file-processed', 'd1', { ...assetData('d1'), status: 'OK' });
    await waitFor(async () => r.got.length === 3, { description: 'three requests' });
    expect(r.got.map((g) => g.headers['x-asset-event'])).toEqual(['file-saved', 'file-saved', 'file-processed']);
  });

  it("delivers an asset's file-saved first even when its file-processed is recorded before it", async () => {
    // The first settings lookup of group 14 (file-saved's, taken first) is slow: file-processed, handled at the
    // same time, is recorded first; it must still go out second.
    const r = await receiver();
    groupSettings.set('14', { urls: [r.url], secret: secret() });
    slowFirstLookup.add('14');
    await publish(14, 'file-saved', 'd14', assetData('d14'));
    await publish(14, 'file-processed', 'd14', { ...assetData('d14'), status: 'OK' });
    await waitFor(async () => r.got.length === 2, { description: 'two requests' });
    expect(r.got.map((g) => g.headers['x-asset-event'])).toEqual(['file-saved', 'file-processed']);
  });

  it('keeps delivering to one URL while another hangs', async () => {
    const slow = await receiver(() => 'hang');
    const fast = await receiver();
    groupSettings.set('5', { urls: [slow.url, fast.url], secret: secret() });
    for (let i = 0; i < 6; i++) await publish(5, 'file-saved', `e${i}`, assetData(`e${i}`));
    const t0 = Date.now();
    await waitFor(async () => fast.got.length === 6, { description: 'the fast receiver served' });
    // Far less than one timeout per hanging request (1.5 s each, four at a time for that URL).
    expect(Date.now() - t0).toBeLessThan(1500);
    await fast.close();
  });

  it('loses no pending retry when the service restarts between two attempts', async () => {
    let up = false;
    const r = await receiver(() => (up ? 200 : 500));
    groupSettings.set('6', { urls: [r.url], secret: secret() });
    const e = await publish(6, 'file-saved', 'f1', assetData('f1'));
    await waitFor(async () => r.got.length >= 1, { description: 'the first attempt' });
    await service.stop();
    up = true;
    const failures = r.got.length;
    service = await startServiceProcess('webhook', env);
    await waitFor(async () => r.got.length > failures, { description: 'the retry after the restart' });
    expect(r.got.at(-1)!.headers['webhook-id']).toBe(e.id);
    await waitFor(async () => (await log(6, '?status=delivered')).body.total === 1, { description: 'delivered' });
  });

  it('signs with both secrets for a day after a rotation', async () => {
    const r = await receiver();
    const [oldSecret, newSecret] = [secret(), secret()];
    groupSettings.set('7', {
      urls: [r.url],
      secret: newSecret,
      previous_secret: oldSecret,
      previous_secret_expires_at: new Date(Date.now() + 86_400_000).toISOString(),
    });
    await publish(7, 'file-saved', 'g1', assetData('g1'));
    await waitFor(async () => r.got.length === 1, { description: 'one delivery' });
    const got = r.got[0]!;
    expect(String(got.headers['webhook-signature']).split(' ')).toHaveLength(2);
    for (const s of [oldSecret, newSecret]) expect(() => new Webhook(s).verify(got.body, got.headers as Record<string, string>)).not.toThrow();
    // Once the overlap is over, the old secret signs no more.
    groupSettings.set('7', {
      urls: [r.url],
      secret: newSecret,
      previous_secret: oldSecret,
      previous_secret_expires_at: new Date(Date.now() - 1000).toISOString(),
    });
    await publish(7, 'file-saved', 'g2', assetData('g2'));
    await waitFor(async () => r.got.length === 2, { description: 'second delivery' });
    expect(String(r.got[1]!.headers['webhook-signature']).split(' ')).toHaveLength(1);
    expect(() => new Webhook(oldSecret).verify(r.got[1]!.body, r.got[1]!.headers as Record<string, string>)).toThrow();
  });

  it('refuses a URL that points inside the network at delivery time', async () => {
    groupSettings.set('8', { urls: ['https://10.1.2.3/hook'], secret: secret() });
    await publish(8, 'file-saved', 'h1', assetData('h1'));
    await waitFor(async () => (await log(8)).body.items[0]?.attempt_count >= 1, { description: 'an attempt' });
    expect((await log(8)).body.items[0].error).toMatch(/refused/);
  });

  it("reissues the requester's callbacks of a range as new, signed messages, as a job", async () => {
    const r = await receiver();
    const s = secret();
    groupSettings.set('9', { urls: [r.url], secret: s });
    const from = new Date(Date.now() - 1000).toISOString();
    const mine = await publish(9, 'file-saved', 'i1', assetData('i1', 1));
    await publish(9, 'file-saved', 'i2', assetData('i2', 2));
    const deleted = await publish(9, 'file-deleted', 'i1', { id: 'i1', event: 'file-deleted', keys: ['original'], status: 'OK', message: '' });
    await waitFor(async () => r.got.length === 3, { description: 'the first deliveries' });
    const reports: any[] = [];
    const sub = admin.subscribe(jobReportSubject('webhook'), {
      callback: (_e, m) => {
        reports.push(m.json());
      },
    });
    const command = {
      id: 'job-77-run-0',
      job_id: 77,
      attempt: 0,
      type: 'reissue_callbacks',
      group_id: '9',
      asset_id: '',
      source_checksum: '',
      content_type: '',
      range: { from, to: new Date(Date.now() + 1000).toISOString() },
      requested_by: { user_id: 1, role_id: 1 },
    };
    await jetstream(admin).publish(jobCommandSubject('webhook'), JSON.stringify(command), { msgID: command.id });
    await waitFor(async () => r.got.length === 5, { description: 'two reissued deliveries' });
    const again = r.got.slice(3);
    expect(again.map((g) => g.headers['webhook-id'])).toEqual([`reissue-77-${mine.id}`, `reissue-77-${deleted.id}`]);
    for (const g of again) expect(() => new Webhook(s).verify(g.body, g.headers as Record<string, string>)).not.toThrow();
    await waitFor(async () => reports.some((x) => x.job_id === 77 && x.state === 'COMPLETED'), { description: 'the job report' });
    sub.unsubscribe();
    expect((await log(9)).body.items.filter((i: any) => i.reissue_job_id === 77)).toHaveLength(2);
  });
});
