import type { NatsConnection } from '@nats-io/nats-core';
import { natsCall } from './connection';
import { openKvBucket, type KvBucketOptions } from './kv-bucket';

/**
 * The KV bucket of used service-token ids, shared by the replicas of every service that verifies service tokens
 * (security review I6): @dam/auth-tokens' `bucketReplayStore` claims each id with one `create`, so a token is
 * single-use across replicas, not only per process. Each identity that verifies needs `kvBucket('SERVICE_TOKENS')`.
 */
export const SERVICE_TOKENS_BUCKET = 'SERVICE_TOKENS';

/**
 * Long enough for every token to expire before its id is forgotten: a token lives 60 s, may be issued 5 s ahead of
 * the verifier's clock and is accepted 5 s late (@dam/auth-tokens' REPLAY_BUCKET_TTL_MS).
 */
const TTL_MS = 70_000;
/**
 * A claim is on the path of every internal request: it fails at once while NATS is away, and within this while it
 * is slow, and the verifier then relies on its own memory (ServiceVerifierOptions.replayUnavailable).
 */
const CLAIM_TIMEOUT_MS = 1000;

export interface ServiceTokenBucket {
  /** Writes `key` only when it does not exist; rejects ("wrong last sequence") when it does. */
  create(key: string, value: string): Promise<number>;
}

/**
 * Opens (or creates) the bucket, brought to `replicas` and its share of `budget` (KvBucketOptions). A full bucket
 * refuses claims (JetStreamFullError): the verifier then relies on its own memory, as when NATS is away.
 */
export async function openServiceTokenBucket(nc: NatsConnection, opts: KvBucketOptions & { replicas: number }): Promise<ServiceTokenBucket> {
  const kv = await openKvBucket(nc, SERVICE_TOKENS_BUCKET, { ...opts, ttlMs: TTL_MS, conformTtl: true });
  return {
    create(key, value) {
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`NATS did not answer a service-token claim within ${CLAIM_TIMEOUT_MS} ms`)), CLAIM_TIMEOUT_MS);
      });
      return Promise.race([natsCall(nc, () => kv.create(key, value), { graceMs: 0 }), late]).finally(() => clearTimeout(timer));
    },
  };
}
