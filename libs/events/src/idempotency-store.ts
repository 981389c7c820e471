import type { KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/nats-core';
import { natsCall, NatsUnavailableError } from './connection';
import { openKvBucket } from './nats';

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
/** Kept responses live a day (CONTRACT §13): the bucket's TTL counts from the last write of a key. */
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
 * whose claim was taken over after it stalled cannot overwrite its successor.
 */
export async function natsIdempotencyStore(
  nc: NatsConnection,
  opts: {
    /** Copies of the bucket in a JetStream cluster (NATS_STREAM_REPLICAS); an existing bucket is scaled to it. */
    replicas?: number;
    runningTtlMs?: number;
    onScaled?(from: number, to: number): void;
  } = {},
) {
  const runningTtlMs = opts.runningTtlMs ?? 2 * 60 * 60 * 1000;
  const kv: KV = await openKvBucket(nc, IDEMPOTENCY_BUCKET, { ttlMs: DAY_MS, replicas: opts.replicas ?? 1, onScaled: opts.onScaled });
  const running = (): string => JSON.stringify({ state: 'running', at: Date.now() } satisfies Entry);
  return {
    async claim(key: string): Promise<Claim> {
      for (let attempt = 0; ; attempt++) {
        try {
          return { kind: 'claimed', token: await natsCall(nc, () => kv.create(key, running())) };
        } catch (error) {
          if (!/wrong last sequence|key exists/i.test(String(error)) || attempt > 3) throw error;
        }
        const entry = await natsCall(nc, () => kv.get(key));
        if (!entry) continue;
        if (entry.operation !== 'PUT') {
          // Released: take it again at this revision (another request may race us: then read again).
          const token = await natsCall(nc, () => kv.update(key, running(), entry.revision)).catch(unlessUnavailable);
          if (token !== undefined) return { kind: 'claimed', token };
          continue;
        }
        const value = entry.json<Entry>();
        if (value.state === 'done' && value.response) return { kind: 'done', response: value.response };
        if (Date.now() - value.at < runningTtlMs) return { kind: 'running' };
        const token = await natsCall(nc, () => kv.update(key, running(), entry.revision)).catch(unlessUnavailable);
        if (token !== undefined) return { kind: 'claimed', token };
      }
    },
    async keep(key: string, token: number, response: KeptResponse): Promise<void> {
      await natsCall(nc, () => kv.update(key, JSON.stringify({ state: 'done', at: Date.now(), response } satisfies Entry), token));
    },
    async release(key: string, token: number): Promise<void> {
      await natsCall(nc, () => kv.delete(key, { previousSeq: token }));
    },
  };
}
