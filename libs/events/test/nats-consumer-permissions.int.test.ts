import { AckPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { scaled, startNats, type TestNats } from '@dam/testing';
import { z } from 'zod';
import {
  ASSET_EVENTS,
  DAM_INTERNAL,
  JOB_REPORTS_FILTER,
  SUBJECT_CDN_EVICT,
  connectNats,
  consume,
  ensureStreams,
  jobCommandSubject,
  replayConsumerName,
  type NatsIdentity,
} from '../src';
import { captureLogger, until } from './helpers';

// Security review F4 (issue 30): an outside system's user, `search` and `link-signing` may act only on consumers of
// their own, never on another identity's (delete it, read its info, pull from it, create or update a consumer under its
// name, ack its deliveries), nor on a consumer named at run time by anyone but admin. Before the fix each of these was
// answered by JetStream (the shared `subscriber` and search could use any name but the services' durables).
const VIOLATION = /Permissions Violation/i;
const STRANGERS = ['subscriber-example', 'search', 'link-signing'] as const;

describe('consumers of their own only (F4)', () => {
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
    await ensureStreams(await as('metadata'));
    const js = jetstream(admin);
    for (let i = 0; i < 3; i++) await js.publish(`assets.events.1.file-saved`, JSON.stringify({ n: i }));
    await js.publish(SUBJECT_CDN_EVICT, JSON.stringify({ id: 'e1', group_id: '1', asset_ids: [], object_keys: [] }));
    // The services' durables, as they create them.
    const jsm = await jetstreamManager(admin);
    await jsm.consumers.add(ASSET_EVENTS, { durable_name: 'webhook-deliveries', ack_policy: AckPolicy.Explicit, max_deliver: 15 });
    // With search's own filter: nats-server 2.9 delivers nothing from a durable whose filter an update added.
    await jsm.consumers.add(ASSET_EVENTS, { durable_name: 'search-index', ack_policy: AckPolicy.Explicit, max_deliver: 15, filter_subject: 'assets.events.>' });
    await jsm.consumers.add(DAM_INTERNAL, {
      durable_name: 'metadata-job-reports',
      ack_policy: AckPolicy.Explicit,
      max_deliver: 15,
      filter_subject: JOB_REPORTS_FILTER,
    });
  });
  afterAll(async () => {
    for (const nc of open) await nc.close();
    await admin.close();
    await server.stop();
  });

  /** A request as `identity`: JetStream's answer, or the error that stopped it (a violation, or no answer in time). */
  const attempt = async (identity: NatsIdentity, subject: string, body: unknown = ''): Promise<string> =>
    (await as(identity)).request(subject, typeof body === 'string' ? body : JSON.stringify(body), { timeout: scaled(1500) }).then(
      (m) => `answered: ${m.string()}`,
      (error: unknown) => String(error),
    );

  const create = (stream: string, name: string, filter?: string) => ({
    stream_name: stream,
    config: { name, durable_name: name, ack_policy: 'explicit', max_deliver: 1, ...(filter ? { filter_subject: filter } : {}) },
  });

  /** Every way to act on `stream`'s consumer `name`, each expected refused. */
  async function refusedOn(identity: NatsIdentity, stream: string, name: string, filter: string): Promise<void> {
    const api = '$JS.API.CONSUMER';
    // All at once: each is refused on its own, and a refusal by timeout would otherwise add up.
    const [del, info, next, created, createUnfiltered, durableCreate, ephemeralCreate, ack] = await Promise.all([
      attempt(identity, `${api}.DELETE.${stream}.${name}`),
      attempt(identity, `${api}.INFO.${stream}.${name}`),
      attempt(identity, `${api}.MSG.NEXT.${stream}.${name}`, { batch: 1, expires: 200_000_000 }),
      attempt(identity, `${api}.CREATE.${stream}.${name}.${filter}`, create(stream, name, filter)),
      attempt(identity, `${api}.CREATE.${stream}.${name}`, create(stream, name)),
      attempt(identity, `${api}.DURABLE.CREATE.${stream}.${name}`, create(stream, name)),
      // The ephemeral-create subject updated a durable named in its body (nats-server 2.9).
      attempt(identity, `${api}.CREATE.${stream}`, { stream_name: stream, config: { name, ack_policy: 'explicit', max_deliver: 1 } }),
      attempt(identity, `$JS.ACK.${stream}.${name}.1.1.1.0.0`),
    ]);
    const outcomes = { delete: del, info, next, create: created, createUnfiltered, durableCreate, ephemeralCreate, ack };
    expect(outcomes).toEqual(Object.fromEntries(Object.keys(outcomes).map((k) => [k, expect.stringMatching(VIOLATION)])));
  }

  it.each(STRANGERS)("refuses %s every act on another identity's durable of ASSET_EVENTS", async (identity) => {
    await refusedOn(identity, ASSET_EVENTS, 'webhook-deliveries', 'assets.events.>');
    if (identity !== 'search') await refusedOn(identity, ASSET_EVENTS, 'search-index', 'assets.events.>');
    // The durables are as their owners made them.
    const jsm = await jetstreamManager(admin);
    for (const name of ['webhook-deliveries', 'search-index'])
      expect((await jsm.consumers.info(ASSET_EVENTS, name)).config).toMatchObject({ durable_name: name, max_deliver: 15 });
  });

  it("refuses link-signing every act on another identity's durable of DAM_INTERNAL, with its own filter too", async () => {
    await refusedOn('link-signing', DAM_INTERNAL, 'metadata-job-reports', SUBJECT_CDN_EVICT);
    const jsm = await jetstreamManager(admin);
    expect((await jsm.consumers.info(DAM_INTERNAL, 'metadata-job-reports')).config).toMatchObject({ filter_subject: JOB_REPORTS_FILTER, max_deliver: 15 });
  });

  it("gives an outside system no list of the stream's consumers (their names would be its way in)", async () => {
    expect(await attempt('subscriber-example', `$JS.API.CONSUMER.NAMES.${ASSET_EVENTS}`, {})).toMatch(VIOLATION);
    expect(await attempt('subscriber-example', `$JS.API.CONSUMER.LIST.${ASSET_EVENTS}`, {})).toMatch(VIOLATION);
  });

  it('lets an outside system create, read, pull, ack and delete the consumer named as itself, and no other', async () => {
    const nc = await as('subscriber-example');
    const jsm = await jetstreamManager(nc);
    await jsm.consumers.add(ASSET_EVENTS, { durable_name: 'subscriber-example', ack_policy: AckPolicy.Explicit });
    const m = await (await jetstream(nc).consumers.get(ASSET_EVENTS, 'subscriber-example')).next({ expires: scaled(2000) });
    expect(m?.subject).toBe('assets.events.1.file-saved');
    expect(await m?.ackAck()).toBe(true);
    expect((await jsm.consumers.info(ASSET_EVENTS, 'subscriber-example')).ack_floor.stream_seq).toBe(1);
    // Another outside system's consumer, and any other name under the old shared prefix, are out of reach.
    await (
      await jetstreamManager(await as('subscriber-other'))
    ).consumers.add(ASSET_EVENTS, { durable_name: 'subscriber-other', ack_policy: AckPolicy.Explicit });
    await refusedOn('subscriber-example', ASSET_EVENTS, 'subscriber-other', 'assets.events.>');
    expect(await attempt('subscriber-example', `$JS.API.CONSUMER.CREATE.${ASSET_EVENTS}.subscriber-audit`, create(ASSET_EVENTS, 'subscriber-audit'))).toMatch(
      VIOLATION,
    );
    expect(await jsm.consumers.delete(ASSET_EVENTS, 'subscriber-example')).toBe(true);
  });

  it("refuses search and link-signing an outside system's consumer, and every name made at run time", async () => {
    const ordered = await jetstream(admin).consumers.get(ASSET_EVENTS, { filter_subjects: 'assets.events.>' });
    const name = (await ordered.info(true)).name;
    for (const identity of ['search', 'link-signing'] as const) {
      await refusedOn(identity, ASSET_EVENTS, 'subscriber-other', 'assets.events.>');
      expect(await attempt(identity, `$JS.API.CONSUMER.INFO.${ASSET_EVENTS}.${name}`)).toMatch(VIOLATION);
    }
  });

  it('lets search pull its own durable and replay the stream with its fixed-name replay consumer', async () => {
    const nc = await as('search');
    const got: string[] = [];
    const c = await consume({
      nc,
      stream: ASSET_EVENTS,
      durable: 'search-index',
      filterSubjects: 'assets.events.>',
      schema: z.unknown(),
      handler: async (_p, ctx) => void got.push(ctx.subject),
      logger: captureLogger(),
      fetchExpiresMs: 1000,
    });
    await until(() => got.length === 3);
    await c.stop();
    const jsm = await jetstreamManager(nc);
    const name = replayConsumerName(ASSET_EVENTS);
    await jsm.consumers.add(ASSET_EVENTS, { name, filter_subject: 'assets.events.>', ack_policy: AckPolicy.Explicit });
    const m = await (await jetstream(nc).consumers.get(ASSET_EVENTS, name)).next({ expires: scaled(2000) });
    expect(m?.subject).toBe('assets.events.1.file-saved');
    expect(await jsm.consumers.delete(ASSET_EVENTS, name)).toBe(true);
  });

  it('lets link-signing hear asset events and CDN evictions as published, and pull its own job durable', async () => {
    const nc = await as('link-signing');
    const heard: string[] = [];
    const subs = ['assets.events.>', SUBJECT_CDN_EVICT].map((subject) => nc.subscribe(subject, { callback: (_e, m) => void heard.push(m.subject) }));
    await nc.flush();
    const js = jetstream(admin);
    await js.publish('assets.events.1.file-deleted', JSON.stringify({ n: 9 }));
    await js.publish(SUBJECT_CDN_EVICT, JSON.stringify({ id: 'e2', group_id: '1', asset_ids: [], object_keys: [] }));
    await until(() => heard.length === 2);
    expect(heard).toEqual(['assets.events.1.file-deleted', SUBJECT_CDN_EVICT]);
    for (const sub of subs) sub.unsubscribe();
    const c = await consume({
      nc,
      stream: DAM_INTERNAL,
      durable: 'link-signing-cdn-jobs',
      filterSubjects: jobCommandSubject('link-signing'),
      schema: z.unknown(),
      handler: async () => undefined,
      logger: captureLogger(),
      fetchExpiresMs: 1000,
    });
    await c.stop();
  });
});
