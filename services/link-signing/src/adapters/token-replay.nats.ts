import type { NatsConnection } from '@nats-io/nats-core';
import { bucketReplayStore, REPLAY_BUCKET_TTL_MS, type ReplayStore } from '@dam/auth-tokens';
import { natsCall, openKvBucket } from '@dam/events';

/** The KV bucket of used service-token ids, shared by every replica (NATS permission: `kvBucket('SERVICE_TOKENS')`). */
export const SERVICE_TOKENS_BUCKET = 'SERVICE_TOKENS';

/**
 * The memory of used service tokens shared by this service's replicas (security review I6): a token captured on the
 * wire and sent to another replica within its minute is refused there too. A claim is one KV `create` (exactly one
 * winner per token id); the bucket forgets ids once their tokens have expired. While NATS is away a claim rejects
 * after the reconnect grace, and the verifier falls back on its own memory (see ServiceVerifierOptions).
 */
export async function natsTokenReplay(nc: NatsConnection, opts: { replicas: number }): Promise<ReplayStore> {
  const kv = await openKvBucket(nc, SERVICE_TOKENS_BUCKET, { ttlMs: REPLAY_BUCKET_TTL_MS, replicas: opts.replicas, conformTtl: true });
  return bucketReplayStore({ create: (key, value) => natsCall(nc, () => kv.create(key, value)) });
}
