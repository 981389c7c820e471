import { jetstreamManager } from '@nats-io/jetstream';
import type { KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/nats-core';
import { natsCall, openKvBucket, type KvBucketOptions } from '@dam/events';
import type { PendingJournal, PendingUpload, StalePending } from '../domain/ports';

export const PENDING_BUCKET = 'UPLOAD_PENDING';

// Entries are refreshed long before this; it only bounds entries of a bucket nobody reaps (and the delete markers
// of a version that left one per upload).
const BUCKET_TTL_MS = 7 * 24 * 60 * 60 * 1000;
/** A listing of the journal that takes longer than this fails (the pass is retried), so the reaper never stalls. */
export const LIST_TIMEOUT_MS = 60_000;
/** How long an upload waits for the journal's stream to elect a leader before it answers 503 (elections take 4-9 s). */
const JOURNAL_ELECTION_WAIT_MS = 12_000;

/**
 * The durable list of objects stored but not yet registered with metadata (JetStream KV, one key per asset
 * id). It survives the upload process, so a restarted or other replica can remove what a crash left behind.
 * A finished entry is purged from the bucket's stream rather than deleted: a KV delete leaves a marker per key
 * that every listing reads again until the bucket's TTL, and the journal sees one key per upload.
 */
export async function natsPendingJournal(
  nc: NatsConnection,
  /** With the bucket's replicas and share of NATS_STREAMS_MAX_BYTES (a full bucket: `open` fails, the upload answers 503). */
  opts: KvBucketOptions & {
    refreshMs: number;
    onError(error: unknown, id: string): void;
  },
): Promise<PendingJournal> {
  const kv: KV = await openKvBucket(nc, PENDING_BUCKET, { ...opts, ttlMs: BUCKET_TTL_MS });
  const stream = `KV_${PENDING_BUCKET}`;
  const jsm = await jetstreamManager(nc);
  const encode = (u: PendingUpload) => JSON.stringify(u);
  /** Every message of the key, entries and markers alike, gone: the key no longer exists and costs nothing. */
  const purge = async (id: string): Promise<void> => {
    await jsm.streams.purge(stream, { filter: `$KV.${PENDING_BUCKET}.${id}` });
  };
  return {
    async open(id, upload) {
      // A cluster node that led the bucket died: the upload waits for the new leader (seconds) rather than failing.
      // NATS down (not coming back within a second or two): 503 at once, nothing stored.
      await natsCall(nc, () => kv.put(id, encode(upload)), { retryMs: JOURNAL_ELECTION_WAIT_MS });
      const timer = setInterval(() => {
        natsCall(nc, () => kv.put(id, encode(upload))).catch((error: unknown) => opts.onError(error, id));
      }, opts.refreshMs);
      timer.unref();
      return {
        async close() {
          clearInterval(timer);
          await natsCall(nc, () => purge(id)).catch((error: unknown) => opts.onError(error, id));
        },
        abandon: () => clearInterval(timer),
      };
    },
    async stale(olderThanMs) {
      const cutoff = Date.now() - olderThanMs;
      const keys: string[] = [];
      const listing = await kv.keys();
      const timer = setTimeout(() => listing.stop(new Error(`listing the ${PENDING_BUCKET} bucket took over ${LIST_TIMEOUT_MS} ms`)), LIST_TIMEOUT_MS);
      try {
        for await (const key of listing) keys.push(key);
      } finally {
        clearTimeout(timer);
      }
      const out: StalePending[] = [];
      for (const key of keys) {
        const entry = await kv.get(key);
        if (!entry || entry.operation !== 'PUT' || entry.created.getTime() > cutoff) continue;
        out.push({ id: key, upload: entry.json<PendingUpload>(), revision: entry.revision });
      }
      return out;
    },
    async remove(id, revision) {
      try {
        // Only if nobody wrote it since (the delete checks the revision), then the marker the delete left.
        await kv.delete(id, { previousSeq: revision });
        await purge(id);
        return true;
      } catch (error) {
        // Another replica reaped it, or the request wrote it again: either way not ours to delete now.
        if (/wrong last sequence/i.test(String(error))) return false;
        throw error;
      }
    },
  };
}
