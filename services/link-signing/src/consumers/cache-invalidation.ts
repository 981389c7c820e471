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
 * Follows ASSET_EVENTS from now on (an ordered consumer: every replica its own, nothing to acknowledge) and drops
 * the cached bytes of replaced and deleted assets. Serving stays correct without it, since every request resolves
 * the asset's current object and its ETag first; this frees the space at once.
 */
export function cacheInvalidation(nc: NatsConnection, cache: ByteCache, logger: Logger) {
  return {
    kind: 'poller' as const,
    name: 'cache-invalidation',
    async start(): Promise<Running> {
      const consumer = await jetstream(nc).consumers.get(ASSET_EVENTS, { filter_subjects: ASSET_EVENTS_SUBJECTS, deliver_policy: DeliverPolicy.New });
      const messages = await consumer.consume();
      const loop = (async () => {
        for await (const m of messages) {
          const type = assetEventTypeOf(m.subject);
          if (!type || !DROPS.has(type)) continue;
          try {
            const assetId = (m.json() as { asset_id?: unknown }).asset_id;
            if (typeof assetId !== 'string') continue;
            const dropped = cache.evictAsset(assetId);
            if (dropped > 0) logger.debug({ asset_id: assetId, event: type, dropped }, 'cached bytes dropped');
          } catch (error) {
            logger.warn({ err: error, subject: m.subject }, 'unreadable asset event');
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
 * Follows `dam.internal.cdn.evict` from now on (an ordered consumer per replica): a purge job run by any replica
 * empties every replica's cache.
 */
export function evictionFollower(nc: NatsConnection, cache: ByteCache, logger: Logger) {
  return {
    kind: 'poller' as const,
    name: 'cdn-evictions',
    async start(): Promise<Running> {
      const consumer = await jetstream(nc).consumers.get(DAM_INTERNAL, { filter_subjects: SUBJECT_CDN_EVICT, deliver_policy: DeliverPolicy.New });
      const messages = await consumer.consume();
      const loop = (async () => {
        for await (const m of messages) {
          const parsed = cdnEvictSchema.safeParse(m.json());
          if (!parsed.success) {
            logger.warn({ subject: m.subject }, 'unreadable eviction');
            continue;
          }
          const dropped = applyEvict(cache, parsed.data);
          if (dropped > 0) logger.debug({ dropped, eviction: parsed.data.id }, 'cached bytes purged');
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

/** Publishes the bytes served every `everyMs`, and once more at shutdown. */
export function usageFlusher(flush: () => Promise<unknown>, everyMs: number, logger: Logger) {
  return {
    kind: 'poller' as const,
    name: 'usage-flush',
    start(): Running {
      const run = () => flush().catch((error: unknown) => logger.warn({ err: error }, 'usage not published'));
      const timer = setInterval(run, everyMs);
      timer.unref();
      return {
        async stop() {
          clearInterval(timer);
          await run();
        },
      };
    },
  };
}
