import { jetstreamManager, type StreamConfig } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import { nanos, type NatsConnection } from '@nats-io/nats-core';
import type { EventLogger } from './logger';
import { ELECTION_RETRY_MS, retryTransient, STREAM_BYTE_SHARES } from './nats';

/** Every JetStream KV bucket the suite creates (each is a stream `KV_<bucket>`). */
export const KV_BUCKETS = ['SERVICE_TOKENS'] as const;
export type KvBucketName = (typeof KV_BUCKETS)[number];

/**
 * Each bucket's part of the budget the streams share (`NATS_STREAMS_MAX_BYTES`, STREAM_BYTE_SHARES): the two together
 * make one whole, so the streams and buckets JetStream reserves never pass the budget. The bucket holds small entries
 * for seconds (one per service token of the last 70 s). Idempotency-Key responses, upload's pending journal and the
 * leases of resumable uploads are kept in PostgreSQL (issue 35), not here; SERVICE_TOKENS took the 1 % of TUS_LOCKS.
 */
export const KV_BUCKET_BYTE_SHARES: Readonly<Record<KvBucketName, number>> = {
  SERVICE_TOKENS: 0.02,
};

/** Each bucket's `max_bytes` of a budget (whole bytes; with streamMaxBytes' their sum never passes the budget). */
export function kvBucketMaxBytes(budget: number): Record<KvBucketName, number> {
  return Object.fromEntries(KV_BUCKETS.map((b) => [b, Math.floor(budget * KV_BUCKET_BYTE_SHARES[b])])) as Record<KvBucketName, number>;
}

/** The shares of streams and buckets together (1: the whole budget). */
export const jetStreamShareTotal = (): number => [...Object.values(STREAM_BYTE_SHARES), ...Object.values(KV_BUCKET_BYTE_SHARES)].reduce((a, b) => a + b, 0);

/** A bucket already holding more than its share: its limit was left as it was (see conformStream). */
export interface LimitKept {
  wanted: number;
  holds: number;
  kept: number;
}

/** How a service opens a bucket: the same for every bucket (kvBucketOptions makes it from the config). */
export interface KvBucketOptions {
  /** Copies of the bucket in a JetStream cluster (NATS_STREAM_REPLICAS); an existing bucket is scaled to it. */
  replicas?: number;
  /**
   * `NATS_STREAMS_MAX_BYTES`: the bytes the streams and buckets share on each server; the bucket gets its share
   * (KV_BUCKET_BYTE_SHARES) as `max_bytes`, applied to an existing bucket too. Unset: no limit (an existing one is lifted).
   */
  budget?: number | undefined;
  onScaled?(from: number, to: number): void;
  onLimitKept?(limit: LimitKept): void;
}

/** The options every service gives a bucket: its config's replicas and budget, and warnings in its log. */
export function kvBucketOptions(
  bucket: KvBucketName,
  config: { NATS_STREAM_REPLICAS: number; NATS_STREAMS_MAX_BYTES?: number | undefined },
  logger: Pick<EventLogger, 'warn'>,
): Required<Pick<KvBucketOptions, 'replicas' | 'onScaled' | 'onLimitKept'>> & { budget: number | undefined } {
  return {
    replicas: config.NATS_STREAM_REPLICAS,
    budget: config.NATS_STREAMS_MAX_BYTES,
    onScaled: (from, to) => logger.warn({ bucket, from, to }, 'KV bucket scaled to NATS_STREAM_REPLICAS'),
    onLimitKept: (limit) =>
      logger.warn({ bucket, ...limit }, 'KV bucket holds more than its share of NATS_STREAMS_MAX_BYTES: its limit is left as it was; raise the budget'),
  };
}

/**
 * A JetStream KV bucket (history 1) as this process wants it: created when missing (an identical bucket another
 * replica just created is no error), else bound, and either way brought to `replicas`, to its share of `budget` and,
 * with `conformTtl`, to `ttlMs` (see conformStream: a bucket keeps the configuration it was created with). Waits out
 * leader elections.
 */
export async function openKvBucket(nc: NatsConnection, bucket: KvBucketName, opts: KvBucketOptions & { ttlMs: number; conformTtl?: boolean }): Promise<KV> {
  const replicas = opts.replicas ?? 1;
  const maxBytes = opts.budget === undefined ? -1 : kvBucketMaxBytes(opts.budget)[bucket];
  const kv = await retryTransient(() => new Kvm(nc).create(bucket, { history: 1, ttl: opts.ttlMs, replicas, max_bytes: maxBytes }), ELECTION_RETRY_MS);
  const done = await conformStream(nc, `KV_${bucket}`, { replicas, maxBytes, ...(opts.conformTtl ? { maxAgeMs: opts.ttlMs } : {}) });
  if (done.previousReplicas !== undefined) opts.onScaled?.(done.previousReplicas, replicas);
  if (done.limitKept) opts.onLimitKept?.(done.limitKept);
  return kv;
}

/**
 * Brings an existing stream (a KV bucket's `KV_<bucket>`) to `replicas`, to `maxBytes` (-1: none) and, given
 * `maxAgeMs`, to that TTL (with a duplicate window no longer than it, as a new bucket has): a bucket keeps the
 * configuration it was created with. A lower `max_bytes` applies at once by deleting the oldest entries, whatever the
 * discard policy: a bucket already holding `maxBytes` or more keeps its limit (`limitKept`) rather than lose entries
 * (a kept response, a pending upload, a lock). Waits out leader elections; `previousReplicas` is set when it had others.
 */
async function conformStream(
  nc: NatsConnection,
  name: string,
  want: { replicas: number; maxBytes: number; maxAgeMs?: number },
): Promise<{ previousReplicas?: number; limitKept?: LimitKept }> {
  const jsm = await retryTransient(() => jetstreamManager(nc), ELECTION_RETRY_MS);
  const done: { previousReplicas?: number; limitKept?: LimitKept } = {};
  await retryTransient(async () => {
    const { config, state } = await jsm.streams.info(name);
    const change: Partial<StreamConfig> = {};
    if (config.num_replicas !== want.replicas) change.num_replicas = want.replicas;
    if (config.max_bytes !== want.maxBytes) {
      if (want.maxBytes >= 0 && state.bytes >= want.maxBytes) done.limitKept = { wanted: want.maxBytes, holds: state.bytes, kept: config.max_bytes };
      else change.max_bytes = want.maxBytes;
    }
    if (want.maxAgeMs !== undefined && config.max_age !== nanos(want.maxAgeMs)) {
      change.max_age = nanos(want.maxAgeMs);
      change.duplicate_window = nanos(Math.min(want.maxAgeMs, 120_000));
    }
    if (Object.keys(change).length === 0) return;
    // Another process may scale it at the same time: the first answer seen counts.
    if (change.num_replicas !== undefined) done.previousReplicas ??= config.num_replicas;
    await jsm.streams.update(name, change);
  }, ELECTION_RETRY_MS);
  return done;
}
