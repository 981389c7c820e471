import { DeliverPolicy, jetstream } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { ASSET_EVENTS, ASSET_EVENTS_SUBJECTS, assetEventTypeOf, cdnEvictSchema, DAM_INTERNAL, SUBJECT_CDN_EVICT } from '@dam/events';
import { applyEvict } from './cdn-jobs.consumer';
import type { Running } from '@dam/http';
import type { Logger } from '@dam/logging';
import type { ByteCache } from '../adapters/byte-cache';

/** Events after which an asset's cached bytes are of no more use: a new original (replace), a deletion. */
const DROPS = new Set(['file-saved', 'file-deleted']);

/**
 * One subject of a stream followed from now on by an ordered consumer (every replica its own, nothing to
 * acknowledge), each message handed to `onMessage` as parsed JSON.
 */
function follower(name: string, nc: NatsConnection, stream: string, filter: string, onMessage: (subject: string, body: unknown) => void, logger: Logger) {
  return {
    kind: 'poller' as const,
    name,
    async start(): Promise<Running> {
      const consumer = await jetstream(nc).consumers.get(stream, { filter_subjects: filter, deliver_policy: DeliverPolicy.New });
      const messages = await consumer.consume();
      const loop = (async () => {
        for await (const m of messages) {
          try {
            onMessage(m.subject, m.json());
          } catch (error) {
            logger.warn({ err: error, subject: m.subject }, 'unreadable message');
          }
        }
      })();
      return {
        async stop() {
          await messages.close();
          await loop.catch(() => undefined);
        },
      };
    },
  };
}

/**
 * Drops the cached bytes of replaced and deleted assets as ASSET_EVENTS announce them. Serving stays correct
 * without it, since every request resolves the asset's current object and its ETag first; this frees the space.
 */
export function cacheInvalidation(nc: NatsConnection, cache: ByteCache, logger: Logger) {
  return follower('cache-invalidation', nc, ASSET_EVENTS, ASSET_EVENTS_SUBJECTS, (subject, body) => {
    const type = assetEventTypeOf(subject);
    const assetId = (body as { asset_id?: unknown }).asset_id;
    if (!type || !DROPS.has(type) || typeof assetId !== 'string') return;
    const dropped = cache.evictAsset(assetId);
    if (dropped > 0) logger.debug({ asset_id: assetId, event: type, dropped }, 'cached bytes dropped');
  }, logger);
}

/** Follows `dam.internal.cdn.evict`: a purge job run by any replica empties every replica's cache. */
export function evictionFollower(nc: NatsConnection, cache: ByteCache, logger: Logger) {
  return follower('cdn-evictions', nc, DAM_INTERNAL, SUBJECT_CDN_EVICT, (_subject, body) => {
    const dropped = applyEvict(cache, cdnEvictSchema.parse(body));
    if (dropped > 0) logger.debug({ dropped }, 'cached bytes purged');
  }, logger);
}
