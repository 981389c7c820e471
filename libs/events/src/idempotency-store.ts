import type { KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/nats-core';
import { JetStreamFullError, natsCall, NatsUnavailableError } from './connection';
import { openKvBucket, type KvBucketOptions } from './kv-bucket';

/** The shape of libs/http's IdempotencyStore (kept structural: this library does not depend on the HTTP one). */
interface KeptResponse {
  fingerprint: string;
  status: number;
  contentType: string;
  body: string;
  headers?: Record<string, string>;
}
type Claim = { kind: 'claimed'; token: number } | { kind: 'running' } | { kind: 'done'; response: KeptResponse };

export const IDEMPOTENCY_BUCKET = 'IDEMPOTENCY';
/**
 * Kept responses live a day (CONTRACT §13): the bucket's TTL counts from the last write of a key, and an existing
 * bucket is given it too (its max_age bounds the bucket with its max_bytes).
 */
const DAY_MS = 24 * 60 * 60 * 1000;

/** A lost race for a revision reads as no token (read again); NATS being unreachable stays an error (503). */
const unlessUnavailable = (error: unknown): undefined => {
  if (error instanceof NatsUnavailableError) throw error;
  return undefined;
};

interface Entry {
  state: 'running' | 'done';
  /** When the running request started: one older than `runningTtlMs` is taken to have died with its process. */
  at: number;
  response?: KeptResponse;
}

/**
 * CONTRACT §13's responses in a JetStream KV bucket shared by every replica of the gateway and upload: a claim is
 * a `create` (one winner), a kept response or a release an update of that revision (the token), so a request
 * whose claim was taken over after it stalled cannot overwrite its successor. A full bucket (its share of
 * NATS_STREAMS_MAX_BYTES, `budget`) refuses writes with JetStreamFullError (`onFull` logs it) until entries expire: a
 * new claim, so the request answers 503 with Retry-After before it runs; a kept response, so a request that did run
 * leaves its key running (repeats answer 409 until `runningTtlMs`, never run it twice meanwhile). A release always
 * fits (its delete marker replaces the entry).
 */
export async function natsIdempotencyStore(nc: NatsConnection, opts: KvBucketOptions & { runningTtlMs?: number } = {}) {
  const runningTtlMs = opts.runningTtlMs ?? 2 * 60 * 60 * 1000;
  const kv: KV = await openKvBucket(nc, IDEMPOTENCY_BUCKET, { ...opts, ttlMs: DAY_MS, conformTtl: true });
  const call = <T>(op: () => Promise<T>): Promise<T> =>
    natsCall(nc, op).catch((error: unknown) => {
      if (error instanceof JetStreamFullError) opts.onFull?.(error);
      throw error;
    });
  const running = (): string => JSON.stringify({ state: 'running', at: Date.now() } satisfies Entry);
  return {
    async claim(key: string): Promise<Claim> {
      for (let attempt = 0; ; attempt++) {
        try {
          return { kind: 'claimed', token: await call(() => kv.create(key, running())) };
        } catch (error) {
          if (!/wrong last sequence|key exists/i.test(String(error)) || attempt > 3) throw error;
        }
        const entry = await call(() => kv.get(key));
        if (!entry) continue;
        if (entry.operation !== 'PUT') {
          // Released: take it again at this revision (another request may race us: then read again).
          const token = await call(() => kv.update(key, running(), entry.revision)).catch(unlessUnavailable);
          if (token !== undefined) return { kind: 'claimed', token };
          continue;
        }
        const value = entry.json<Entry>();
        if (value.state === 'done' && value.response) return { kind: 'done', response: value.response };
        if (Date.now() - value.at < runningTtlMs) return { kind: 'running' };
        const token = await call(() => kv.update(key, running(), entry.revision)).catch(unlessUnavailable);
        if (token !== undefined) return { kind: 'claimed', token };
      }
    },
    async keep(key: string, token: number, response: KeptResponse): Promise<void> {
      await call(() => kv.update(key, JSON.stringify({ state: 'done', at: Date.now(), response } satisfies Entry), token));
    },
    async release(key: string, token: number): Promise<void> {
      await call(() => kv.delete(key, { previousSeq: token }));
    },
  };
}
