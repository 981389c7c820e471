import { createHash } from 'node:crypto';

/**
 * The memory of used service tokens (`jti`), so a captured token cannot be sent again. A verifier always keeps its
 * own in memory; one shared by every replica of a service (security review I6) also stops a replay to another
 * replica within the token's minute.
 */
export interface ReplayStore {
  /**
   * Records `jti` until `expiresAtMs`, atomically for every verifier sharing the store: false when it was already
   * recorded. Rejects when the store cannot answer.
   */
  claim(jti: string, expiresAtMs: number): Promise<boolean>;
}

export interface MemoryReplayStore extends ReplayStore {
  /** `claim`, at once. */
  claimNow(jti: string, expiresAtMs: number): boolean;
}

/** Token ids in this process's memory until they expire (at most `max`; the oldest go first beyond it). */
export function memoryReplayStore(now: () => number = Date.now, max = 500_000): MemoryReplayStore {
  const seen = new Map<string, number>();
  const claimNow = (jti: string, expiresAtMs: number): boolean => {
    const t = now();
    // Insertion order is close to expiry order (every token lives the same minute): prune from the front.
    for (const [id, exp] of seen) {
      if (exp > t && seen.size < max) break;
      seen.delete(id);
    }
    if (seen.has(jti)) return false;
    seen.set(jti, expiresAtMs);
    return true;
  };
  return { claimNow, claim: (jti, expiresAtMs) => Promise.resolve(claimNow(jti, expiresAtMs)) };
}

/**
 * The part of a JetStream KV bucket (@nats-io/kv's `KV`) the shared store uses: `create` writes a key only when it
 * does not exist (or was deleted), and rejects otherwise ("wrong last sequence").
 */
export interface CreateOnlyBucket {
  create(key: string, value: string): Promise<number>;
}

/** How long a bucket must keep a token id: the longest life of a token (60 s, issued up to 5 s ahead) and the clock tolerance (5 s). */
export const REPLAY_BUCKET_TTL_MS = 70_000;

const EXISTS = /wrong last sequence|key exists/i;

/**
 * A replay store in a KV bucket shared by every replica (the bucket's TTL, at least REPLAY_BUCKET_TTL_MS, forgets the
 * ids of expired tokens): a claim is a `create`, so exactly one verifier wins each token id, whichever replica.
 */
export function bucketReplayStore(bucket: CreateOnlyBucket): ReplayStore {
  return {
    async claim(jti) {
      // A token id is any string its signer chose: hashed into the characters a KV key allows.
      const key = `jti.${createHash('sha256').update(jti).digest('hex')}`;
      try {
        await bucket.create(key, '');
        return true;
      } catch (error) {
        if (EXISTS.test(String(error))) return false;
        throw error;
      }
    },
  };
}
