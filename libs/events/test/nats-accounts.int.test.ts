import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import { scaled, startNats, type TestNats } from '@dam/testing';
import { z } from 'zod';
import {
  ASSET_EVENTS,
  DAM_INTERNAL,
  SUBJECT_ADDON_STATUS,
  SUBJECT_JOB_REPORTS,
  JOB_REPORTS_FILTER,
  addonStatusClient,
  jobReportSubject,
  jobCommandSubject,
  noticeSubject,
  NOTICES_FILTER,
  serveAddonStatus,
  connectNats,
  consume,
  ensureStreams,
  generateNatsUsers,
  inboxPrefixOf,
  waitForStreams,
  type NatsIdentity,
} from '../src';
import { captureLogger, streamMessages, until } from './helpers';

describe('NATS identities and permissions', () => {
  let server: TestNats;
  let admin: NatsConnection;
  const open: NatsConnection[] = [];
  const as = async (identity: NatsIdentity) => {
    const nc = await connectNats(server.url, identity, server.seed(identity));
    open.push(nc);
    return nc;
  };

  beforeAll(async () => {
    server = await startNats();
    admin = await connectNats(server.url, 'test-admin', server.seed('admin'));
    // Created by metadata, whose identity alone may: proves its rights at the same time.
    await ensureStreams(await as('metadata'));
  });
  afterAll(async () => {
    for (const nc of open) await nc.close();
    await admin.close();
    await server.stop();
  });

  /** A JetStream publish by `identity`: the ack, or the error that stopped it. */
  const jsPublish = async (identity: NatsIdentity, subject: string): Promise<'stored' | string> =>
    jetstream(await as(identity), { timeout: 2000 })
      .publish(subject, JSON.stringify({ forged: true }))
      .then(
        () => 'stored',
        (error: unknown) => String(error),
      );

  it('refuses anonymous connections and unknown seeds', async () => {
    await expect(connect({ servers: server.url, reconnect: false })).rejects.toThrow(/Authorization/i);
    const stranger = generateNatsUsers().find((u) => u.identity === 'admin')?.seed;
    await expect(connectNats(server.url, 'stranger', stranger).then((nc) => nc.close())).rejects.toThrow(/Authorization/i);
  });

  it('lets no service publish outside its own subjects', async () => {
    const before = { events: await streamMessages(admin, ASSET_EVENTS), internal: await streamMessages(admin, DAM_INTERNAL) };
    // A forged job report: only the worker identities (conversion, transcode, upload, link-signing, webhook, addon) may
    // send one, each on its own kind's subject only.
    expect(await jsPublish('gateway', jobReportSubject('conversion'))).toMatch(/permission/i);
    expect(await jsPublish('auth', jobReportSubject('conversion'))).toMatch(/permission/i);
    expect(await jsPublish('search', jobReportSubject('conversion'))).toMatch(/permission/i);
    expect(await jsPublish('subscriber-example', jobReportSubject('conversion'))).toMatch(/permission/i);
    expect(await jsPublish('subscriber-example', SUBJECT_JOB_REPORTS)).toMatch(/permission/i);
    // F16: a worker kind cannot report as another (a conversion worker completing an addon job), nor on the bare subject.
    expect(await jsPublish('conversion', jobReportSubject('addon'))).toMatch(/permission/i);
    expect(await jsPublish('addon', jobReportSubject('conversion'))).toMatch(/permission/i);
    expect(await jsPublish('upload', jobReportSubject('transcode'))).toMatch(/permission/i);
    expect(await jsPublish('webhook', jobReportSubject('link-signing'))).toMatch(/permission/i);
    expect(await jsPublish('conversion', SUBJECT_JOB_REPORTS)).toMatch(/permission/i);
    // F16: a usage metric's subject is its counting service's alone.
    expect(await jsPublish('addon', 'dam.internal.usage.cdn_bytes')).toMatch(/permission/i);
    expect(await jsPublish('link-signing', 'dam.internal.usage.api_requests')).toMatch(/permission/i);
    // Only metadata hands out jobs: a worker cannot order work of its own or of another worker kind.
    expect(await jsPublish('conversion', jobCommandSubject('conversion'))).toMatch(/permission/i);
    expect(await jsPublish('upload', jobCommandSubject('conversion'))).toMatch(/permission/i);
    expect(await jsPublish('upload', jobCommandSubject('upload'))).toMatch(/permission/i);
    expect(await jsPublish('conversion', 'assets.events.1.file-processed')).toMatch(/permission/i);
    expect(await jsPublish('conversion', 'dam.internal.other')).toMatch(/permission/i);
    expect(await jsPublish('subscriber-example', 'assets.events.1.file-saved')).toMatch(/permission/i);
    expect(await jsPublish('webhook', 'assets.events.1.file-saved')).toMatch(/permission/i);
    expect(await jsPublish('webhook', jobCommandSubject('webhook'))).toMatch(/permission/i);
    // Login's notifications: a notice kind is its recording service's alone (a forged "job failed" would put any text
    // in front of a user at login).
    expect(await jsPublish('webhook', noticeSubject('job-failed'))).toMatch(/permission/i);
    expect(await jsPublish('conversion', noticeSubject('job-failed'))).toMatch(/permission/i);
    expect(await jsPublish('auth', noticeSubject('job-failed'))).toMatch(/permission/i);
    expect(await jsPublish('metadata', noticeSubject('webhook-failed'))).toMatch(/permission/i);
    expect(await jsPublish('gateway', 'dam.internal.notices.other')).toMatch(/permission/i);
    // The gateway counts requests, nothing more.
    expect(await jsPublish('gateway', 'dam.internal.usage.cdn_bytes')).toMatch(/permission/i);
    expect(await jsPublish('gateway', 'assets.events.1.file-saved')).toMatch(/permission/i);
    expect(await streamMessages(admin, ASSET_EVENTS)).toBe(before.events);
    expect(await streamMessages(admin, DAM_INTERNAL)).toBe(before.internal);
    // What each may send does arrive.
    expect(await jsPublish('conversion', jobReportSubject('conversion'))).toBe('stored');
    expect(await jsPublish('upload', jobReportSubject('upload'))).toBe('stored');
    expect(await jsPublish('addon', jobReportSubject('addon'))).toBe('stored');
    expect(await jsPublish('metadata', jobCommandSubject('conversion'))).toBe('stored');
    expect(await jsPublish('metadata', 'assets.events.1.file-saved')).toBe('stored');
    expect(await jsPublish('metadata', noticeSubject('job-failed'))).toBe('stored');
    expect(await jsPublish('webhook', noticeSubject('webhook-failed'))).toBe('stored');
  });

  it('lets auth read the notices through its own durable, and no other service', async () => {
    const got: string[] = [];
    const c = await consume({
      nc: await as('auth'),
      stream: DAM_INTERNAL,
      durable: 'auth-notices',
      filterSubjects: NOTICES_FILTER,
      schema: z.unknown(),
      handler: async (_payload, ctx) => {
        got.push(ctx.subject);
      },
      logger: captureLogger(),
      fetchExpiresMs: 1000,
    });
    await jetstream(admin).publish(noticeSubject('job-failed'), JSON.stringify({ probe: true }));
    await until(() => got.includes(noticeSubject('job-failed')));
    await c.stop();
    await expect(
      consume({
        nc: await as('search'),
        stream: DAM_INTERNAL,
        durable: 'auth-notices',
        filterSubjects: NOTICES_FILTER,
        schema: z.unknown(),
        handler: async () => undefined,
        logger: captureLogger(),
      }),
    ).rejects.toThrow(/permission|timeout/i);
  });

  it('lets no service but metadata change the streams', async () => {
    const jsm = await jetstreamManager(await as('conversion'));
    await expect(jsm.streams.update(ASSET_EVENTS, { subjects: ['assets.events.>', 'dam.internal.>'] })).rejects.toThrow(/permission/i);
    await expect(jsm.streams.delete(DAM_INTERNAL)).rejects.toThrow(/permission/i);
  });

  it('gives an outside subscriber ASSET_EVENTS to read and nothing of DAM_INTERNAL', async () => {
    const nc = await as('subscriber-example');
    await waitForStreams(nc, [ASSET_EVENTS]);
    const js = jetstream(nc);
    await (await jetstreamManager(nc)).consumers.add(ASSET_EVENTS, { durable_name: 'subscriber-example' });
    const consumer = await js.consumers.get(ASSET_EVENTS, 'subscriber-example');
    const first = await consumer.next({ expires: 2000 });
    expect(first?.subject).toMatch(/^assets\.events\./);
    // An ordered consumer (a name made at run time) of either stream, or a durable of its own on DAM_INTERNAL: refused.
    await expect(js.consumers.get(ASSET_EVENTS).then((c) => c.next({ expires: 1000 }))).rejects.toThrow(/permission|timeout/i);
    await expect(js.consumers.get(DAM_INTERNAL).then((c) => c.next({ expires: 1000 }))).rejects.toThrow(/permission|timeout/i);
    const jsm = await jetstreamManager(nc);
    await expect(jsm.consumers.add(DAM_INTERNAL, { durable_name: 'spy' })).rejects.toThrow(/permission|timeout/i);
  });

  it('lets each service consume its own durable, and only that one', async () => {
    const nc = await as('metadata');
    const got: unknown[] = [];
    const c = await consume({
      nc,
      stream: DAM_INTERNAL,
      durable: 'metadata-job-reports',
      filterSubjects: JOB_REPORTS_FILTER,
      schema: z.unknown(),
      handler: async (payload) => {
        got.push(payload);
      },
      logger: captureLogger(),
      fetchExpiresMs: 1000,
    });
    await until(() => got.length > 0);
    await c.stop();
    await expect(
      consume({
        nc: await as('conversion'),
        stream: DAM_INTERNAL,
        durable: 'metadata-job-reports',
        schema: z.unknown(),
        handler: async () => undefined,
        logger: captureLogger(),
      }),
    ).rejects.toThrow(/permission|timeout/i);
  });

  it('lets metadata ask the addon service which models loaded, and nobody else answer or ask', async () => {
    const addon = await as('addon');
    // The answer comes from this process: the limit leaves a loaded machine room (no answer means "nobody knows").
    const ask = addonStatusClient(await as('metadata'), { timeoutMs: scaled(1000), cacheMs: 0 });
    // No addon replica: nobody knows, the run is queued.
    expect(await ask('background_removal')).toBeUndefined();
    const stored = await streamMessages(admin, DAM_INTERNAL);
    const sub = serveAddonStatus(addon, () => ({
      auto_tagging: { state: 'ready' },
      background_removal: { state: 'failed', reason: 'no model here' },
      face_recognition: { state: 'loading' },
    }));
    await addon.flush();
    expect(await ask('background_removal')).toBe('no model here');
    expect(await ask('auto_tagging')).toBeUndefined();
    expect(await ask('face_recognition')).toBeUndefined();
    // Another service may neither answer (its subscription is refused) nor ask.
    const forged = await as('conversion');
    forged.subscribe(SUBJECT_ADDON_STATUS, {
      callback: (error, msg) => {
        if (!error) msg.respond(JSON.stringify({ addons: {} }));
      },
    });
    await expect(forged.request(SUBJECT_ADDON_STATUS, '', { timeout: 500 })).rejects.toThrow();
    expect(await ask('background_removal')).toBe('no model here');
    // Questions and answers are not stored anywhere.
    expect(await streamMessages(admin, DAM_INTERNAL)).toBe(stored);
    sub.unsubscribe();
  });

  it("lets the addon answer metadata's questions but not publish into metadata's inbox otherwise (F16)", async () => {
    const addon = await as('addon');
    const violations: string[] = [];
    void (async () => {
      for await (const s of addon.status()) if (s.type === 'error' && /permission/i.test(String(s.error))) violations.push(String(s.error));
    })();
    // A reply metadata never asked for (a forged answer to a question in flight, or noise for its requests).
    addon.publish(`${inboxPrefixOf('metadata')}.secprobe.x`, JSON.stringify({ addons: {} }));
    // A subject refused to every service, after it: once its violation is in, the one before it would be too.
    addon.publish('dam.internal.secprobe', '');
    await addon.flush();
    await until(() => violations.some((v) => v.includes('dam.internal.secprobe')));
    expect(violations.some((v) => v.includes(`${inboxPrefixOf('metadata')}.secprobe.x`))).toBe(true);
  });
});
