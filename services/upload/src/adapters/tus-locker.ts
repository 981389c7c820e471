import { randomBytes } from 'node:crypto';
import type { KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/nats-core';
import { natsCall, openKvBucket, type KvBucketOptions } from '@dam/events';
import type * as TusServer from '@tus/server' with { 'resolution-mode': 'import' };

/** What tus clients retry on (tus-js-client does): the upload is being written by another request. */
const LOCKED = { status_code: 423, body: 'Another request is writing this upload: retry shortly\n' };

export const TUS_LOCKS_BUCKET = 'TUS_LOCKS';

/** With the bucket's replicas and share of NATS_STREAMS_MAX_BYTES (a full bucket: the request answers 503). */
export interface TusLockerOptions extends KvBucketOptions {
  /** A holder that stopped renewing (its process died) loses the lock after this long. */
  ttlMs?: number;
  /** How long a request waits for an upload's lock before it answers an error. */
  acquireTimeoutMs?: number;
  /** How often a waiting request tries again. */
  pollMs?: number;
  onError?(error: unknown, id: string): void;
}

type Locker = TusServer.Locker;
type Lock = TusServer.Lock;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const taken = (error: unknown): boolean => /wrong last sequence|key exists/i.test(String(error));

/**
 * One lock per upload across every replica of the upload service: first within this process (a request of this
 * process holding it is asked to let go, as tus's own in-memory locker does), then a key of the JetStream KV bucket TUS_LOCKS, created
 * by one holder at a time and renewed while held. A retried PATCH that reaches another replica waits until the
 * request it retries has released the upload (or died: its key then expires after `ttlMs`), so two requests never
 * write one upload at once.
 */
export async function natsTusLocker(nc: NatsConnection, opts: TusLockerOptions = {}): Promise<Locker> {
  const ttlMs = opts.ttlMs ?? 30_000;
  const acquireTimeoutMs = opts.acquireTimeoutMs ?? 30_000;
  const pollMs = opts.pollMs ?? 100;
  // An existing bucket keeps the TTL it was created with: a lock renewed every ttlMs / 3 in a bucket whose keys
  // expire sooner would be lost while held, so the bucket is given this locker's TTL.
  const kv: KV = await openKvBucket(nc, TUS_LOCKS_BUCKET, { ...opts, ttlMs, conformTtl: true });
  /** Uploads locked in this process, with how to ask their holder to let go. */
  const held = new Map<string, () => Promise<void> | void>();
  const keyOf = (id: string) => id.replace(/[^-/_=.a-zA-Z0-9]/g, '_');

  class NatsLock implements Lock {
    private revision = 0;
    private renew: NodeJS.Timeout | undefined;

    constructor(private readonly id: string) {}

    async lock(signal: AbortSignal, requestRelease: () => Promise<void> | void): Promise<void> {
      const deadline = Date.now() + acquireTimeoutMs;
      for (let asked: unknown; held.has(this.id);) {
        const release = held.get(this.id);
        if (release !== asked) {
          asked = release;
          await release?.();
        }
        if (signal.aborted || Date.now() > deadline) throw LOCKED;
        await sleep(10);
      }
      held.set(this.id, requestRelease);
      const key = keyOf(this.id);
      const token = randomBytes(8).toString('hex');
      try {
        for (;;) {
          try {
            this.revision = await natsCall(nc, () => kv.create(key, token));
            break;
          } catch (error) {
            if (!taken(error)) throw error;
          }
          if (signal.aborted || Date.now() > deadline) throw LOCKED;
          await sleep(pollMs);
        }
      } catch (error) {
        held.delete(this.id);
        throw error;
      }
      this.renew = setInterval(
        () => {
          natsCall(nc, () => kv.update(key, token, this.revision)).then(
            (revision) => (this.revision = revision),
            (error: unknown) => opts.onError?.(error, this.id),
          );
        },
        Math.max(50, Math.floor(ttlMs / 3)),
      );
      this.renew.unref();
    }

    async unlock(): Promise<void> {
      clearInterval(this.renew);
      // Only this holder's key: one that expired and was taken by another request stays.
      await natsCall(nc, () => kv.delete(keyOf(this.id), { previousSeq: this.revision })).catch((error: unknown) => {
        if (!taken(error)) opts.onError?.(error, this.id);
      });
      held.delete(this.id);
    }
  }

  return { newLock: (id: string) => new NatsLock(id) };
}
