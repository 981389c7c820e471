import type { NatsConnection } from '@nats-io/nats-core';
import { ASSET_EVENTS_SUBJECTS, assetEventTypeOf, cdnEvictSchema, SUBJECT_CDN_EVICT } from '@dam/events';
import { applyEvict } from './cdn-jobs.consumer';
import type { Running } from '@dam/http';
import type { Logger } from '@dam/logging';
import type { ByteCache } from '../adapters/byte-cache';
import type { CacheTier } from '../adapters/cache-tier';

/** Events after which an asset's cached bytes are of no more use: a new original (replace), a deletion. */
const DROPS = new Set(['file-saved', 'file-deleted']);
/**
 * The cache tier keeps answers by link, not by object version: also a conversion made again (Process) or added again
 * under its name (Add Conversion, the same object key), after which its links and their transforms serve new bytes.
 */
const TIER_DROPS = new Set([...DROPS, 'file-processed']);

/**
 * Every replica follows the notices as they are published (a plain NATS subscription: the stream's copy is not
 * needed, so no JetStream consumer exists whose name another identity could act on, security review F4). What is
 * published while the connection is down is not seen: after a reconnection the cache is emptied, since a notice of a
 * replaced or purged object may have been missed.
 */
function follower(name: string, nc: NatsConnection, subject: string, onMessage: (subject: string, body: unknown) => void, cache: ByteCache, logger: Logger) {
  return {
    kind: 'poller' as const,
    name,
    async start(): Promise<Running> {
      const sub = nc.subscribe(subject, {
        callback: (err, m) => {
          if (err) return logger.warn({ err, subject }, 'subscription ended');
          try {
            onMessage(m.subject, m.json());
          } catch (error) {
            logger.warn({ err: error, subject: m.subject }, 'unreadable message');
          }
        },
      });
      let stopped = false;
      // Ends with the connection (a status iterator cannot be stopped on its own); quiet once stopped.
      void (async () => {
        for await (const s of nc.status()) {
          if (stopped) return;
          if (s.type !== 'reconnect') continue;
          const dropped = cache.clear();
          if (dropped > 0) logger.info({ follower: name, dropped }, 'cached bytes dropped after a reconnection: notices may have been missed');
        }
      })().catch(() => undefined);
      // The subscription is in place once the server has it: a notice published after start() returns is seen.
      await nc.flush();
      return {
        async stop() {
          stopped = true;
          sub.unsubscribe();
        },
      };
    },
  };
}

/**
 * Drops the cached bytes of replaced and deleted assets as asset events announce them. Serving stays correct
 * without it, since every request resolves the asset's current object and its ETag first; this frees the space.
 * The cache tier in front (when there is one) is not asked again within max-age: its keys of the asset are purged,
 * after a conversion made again too (TIER_DROPS).
 */
export function cacheInvalidation(nc: NatsConnection, cache: ByteCache, logger: Logger, tier?: CacheTier) {
  return follower(
    'cache-invalidation',
    nc,
    ASSET_EVENTS_SUBJECTS,
    (subject, body) => {
      const type = assetEventTypeOf(subject);
      const assetId = (body as { asset_id?: unknown }).asset_id;
      if (!type || typeof assetId !== 'string') return;
      if (DROPS.has(type)) {
        const dropped = cache.evictAsset(assetId);
        if (dropped > 0) logger.debug({ asset_id: assetId, event: type, dropped }, 'cached bytes dropped');
      }
      if (tier && TIER_DROPS.has(type)) void tierPurge(tier, { assetIds: [assetId] }, logger);
    },
    cache,
    logger,
  );
}

/** Follows `dam.internal.cdn.evict`: a purge job run by any replica empties every replica's cache. */
export function evictionFollower(nc: NatsConnection, cache: ByteCache, logger: Logger, tier?: CacheTier) {
  return follower(
    'cdn-evictions',
    nc,
    SUBJECT_CDN_EVICT,
    (_subject, body) => {
      const evict = cdnEvictSchema.parse(body);
      const dropped = applyEvict(cache, evict);
      if (dropped > 0) logger.debug({ dropped }, 'cached bytes purged');
      if (tier) void tierPurge(tier, { assetIds: evict.asset_ids, objectKeys: evict.object_keys }, logger);
    },
    cache,
    logger,
  );
}

async function tierPurge(tier: CacheTier, which: Parameters<CacheTier['purge']>[0], logger: Logger): Promise<void> {
  try {
    const purged = await tier.purge(which);
    if (purged > 0) logger.debug({ purged }, 'cache tier keys purged');
  } catch (err) {
    logger.warn({ err }, 'cache tier purge failed');
  }
}
