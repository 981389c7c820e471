import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { nanos, type NatsConnection } from '@nats-io/nats-core';
import { isDependencyUnavailable } from '@dam/errors';
import { startNats, type TestNats } from '@dam/testing';
import {
  connectNats,
  JetStreamFullError,
  jetStreamShareTotal,
  KV_BUCKETS,
  kvBucketMaxBytes,
  natsCall,
  openKvBucket,
  openServiceTokenBucket,
  SERVICE_TOKENS_BUCKET,
  streamMaxBytes,
  type LimitKept,
} from '../src';

/**
 * Production form D6 (issue 31), its left-overs: every KV bucket has a byte limit, its share of the budget the streams
 * take theirs from (NATS_STREAMS_MAX_BYTES), applied on create and to an existing bucket on start; a full bucket
 * refuses writes as a dependency that is unavailable (503), against a real nats-server.
 */
describe('KV bucket byte limits', () => {
  let server: TestNats;
  let admin: NatsConnection;
  let jsm: JetStreamManager;
  const open: NatsConnection[] = [];
  const as = async (identity: 'auth') => {
    const nc = await connectNats(server.url, identity, server.seed(identity));
    open.push(nc);
    return nc;
  };
  const configOf = async (bucket: string) => (await jsm.streams.info(`KV_${bucket}`)).config;
  const bytesOf = async (bucket: string) => (await jsm.streams.info(`KV_${bucket}`)).state.bytes;
  // Small enough to fill in a few dozen writes: the bucket's share (2 %) is 40 000 bytes.
  const BUDGET = 2_000_000;
  const SERVICE_TOKENS_TTL_MS = 70_000;

  beforeAll(async () => {
    server = await startNats();
    admin = await connectNats(server.url, 'kv-limits-test', server.seed('admin'));
    jsm = await jetstreamManager(admin);
  });
  // Each test starts without buckets.
  afterEach(async () => {
    for (const b of KV_BUCKETS) await jsm.streams.delete(`KV_${b}`).catch(() => undefined);
  });
  afterAll(async () => {
    for (const nc of open) await nc.close();
    await admin.drain();
    await server.stop();
  });

  it('splits one budget between the streams and the buckets: together they never take more', () => {
    expect(jetStreamShareTotal()).toBeCloseTo(1, 9);
    for (const budget of [1024 * 1024, BUDGET, 644_245_094, 32_212_254_720]) {
      const all = [...Object.values(streamMaxBytes(budget)), ...Object.values(kvBucketMaxBytes(budget))];
      expect(all.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(budget);
      expect(Math.min(...all)).toBeGreaterThan(0);
    }
  });

  it('creates every bucket with its share of the budget as max_bytes, from the identities that open them', async () => {
    const limits = kvBucketMaxBytes(BUDGET);
    await openServiceTokenBucket(await as('auth'), { replicas: 1, budget: BUDGET });
    const got = Object.fromEntries(await Promise.all(KV_BUCKETS.map(async (b) => [b, (await configOf(b)).max_bytes] as const)));
    expect(got).toEqual(limits);
    // A KV bucket refuses what does not fit rather than drop an entry (the kv client creates it so).
    expect(await Promise.all(KV_BUCKETS.map(async (b) => (await configOf(b)).discard))).toEqual(KV_BUCKETS.map(() => 'new'));
  });

  it('brings an existing bucket to its share and its max_age on start, keeps a limit it already passes, lifts it without a budget', async () => {
    // As a release before the limits left it: no max_bytes (and here no max_age either).
    await new Kvm(admin).create(SERVICE_TOKENS_BUCKET, { history: 1 });
    expect([(await configOf(SERVICE_TOKENS_BUCKET)).max_bytes, (await configOf(SERVICE_TOKENS_BUCKET)).max_age]).toEqual([-1, 0]);
    const kept: LimitKept[] = [];
    const auth = await as('auth');
    await openServiceTokenBucket(auth, { replicas: 1, budget: BUDGET, onLimitKept: (l) => kept.push(l) });
    expect([(await configOf(SERVICE_TOKENS_BUCKET)).max_bytes, (await configOf(SERVICE_TOKENS_BUCKET)).max_age]).toEqual([
      kvBucketMaxBytes(BUDGET).SERVICE_TOKENS,
      nanos(SERVICE_TOKENS_TTL_MS),
    ]);
    expect(kept).toEqual([]);

    // The configuration wins both ways: without a budget the limit goes.
    await openServiceTokenBucket(auth, { replicas: 1 });
    expect((await configOf(SERVICE_TOKENS_BUCKET)).max_bytes).toBe(-1);

    // Now holding more than its share (40 000 bytes): lowering the limit would delete the oldest entries (used token
    // ids: replays), so it keeps its limit, and says so.
    const tokens = await new Kvm(admin).open(SERVICE_TOKENS_BUCKET);
    for (let i = 0; i < 50; i++) await tokens.create(`jti.${i}`, 'x'.repeat(1000));
    const held = await bytesOf(SERVICE_TOKENS_BUCKET);
    expect(held).toBeGreaterThan(kvBucketMaxBytes(BUDGET).SERVICE_TOKENS);
    await openServiceTokenBucket(auth, { replicas: 1, budget: BUDGET, onLimitKept: (l) => kept.push(l) });
    expect([(await configOf(SERVICE_TOKENS_BUCKET)).max_bytes, (await jsm.streams.info(`KV_${SERVICE_TOKENS_BUCKET}`)).state.messages]).toEqual([-1, 50]);
    expect(kept).toEqual([{ wanted: kvBucketMaxBytes(BUDGET).SERVICE_TOKENS, holds: held, kept: -1 }]);
  });

  it('refuses writes to a full bucket as a dependency that is unavailable (503)', async () => {
    const auth = await as('auth');
    const kv = await openKvBucket(auth, SERVICE_TOKENS_BUCKET, { ttlMs: SERVICE_TOKENS_TTL_MS, conformTtl: true, budget: BUDGET });
    const limit = kvBucketMaxBytes(BUDGET).SERVICE_TOKENS;
    // Filled up to its max_bytes to the last few bytes: values of 1000, then 100, then 1 byte, each size until
    // JetStream refuses it.
    let puts = 0;
    const fill = async (size: number) => {
      // At most twice the share in puts of this size: a bucket without a limit never refuses.
      for (let i = 0; i < (2 * limit) / size && i < 2000; i++) {
        const refused = await kv.put(`other.${puts++}`, 'x'.repeat(size)).then(
          () => undefined,
          (error: unknown) => error,
        );
        if (refused === undefined) continue;
        expect(String(refused)).toMatch(/maximum bytes exceeded/);
        return;
      }
      throw new Error(`${SERVICE_TOKENS_BUCKET} took ${puts} puts without refusing one (max_bytes ${(await configOf(SERVICE_TOKENS_BUCKET)).max_bytes})`);
    };
    await fill(1000);
    await fill(100);
    await fill(1);
    expect(puts).toBeGreaterThan(10);

    const refused = await natsCall(auth, () => kv.create('k1', 'x'.repeat(50))).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(JetStreamFullError);
    expect([isDependencyUnavailable(refused), String(refused)]).toEqual([true, expect.stringMatching(/no room.*maximum bytes exceeded/)]);
    expect(await bytesOf(SERVICE_TOKENS_BUCKET)).toBeLessThanOrEqual(limit);
  });
});
