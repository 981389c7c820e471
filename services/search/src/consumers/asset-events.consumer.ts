import { z } from 'zod';
import type { NatsConnection } from '@nats-io/nats-core';
import { ASSET_EVENTS, ASSET_EVENTS_SUBJECTS, assetDataSchema, assetEventTypeOf, consumerWorker, type ConsumerWorker } from '@dam/events';
import type { Logger } from '@dam/logging';
import type { SearchIndexRepository } from '../adapters/search-index.repository';

export const INDEX_DURABLE = 'search-index';

/** Any asset event: the envelope checked here, the payload by its type below. */
export const assetEventEnvelope = z.looseObject({
  id: z.string().min(1),
  type: z.string().min(1),
  group_id: z.string().regex(/^\d+$/),
  asset_id: z.string().min(1),
  version: z.number().int().positive(),
  data_schema_id: z.number().int().nonnegative().optional(),
  addon_terms: z.object({ labels: z.array(z.string()), words: z.array(z.string()) }).optional(),
  data: z.unknown(),
});
const deletion = z.looseObject({ keys: z.array(z.string()).default([]) });
/** file-deleted of a Delete that left the asset live carries the asset as it now is (libs/events FILE_DELETED). */
const liveAfterDeletion = z.looseObject({ asset: assetDataSchema });

/** Applies one event to the read model; returns whether it changed a row. */
export async function applyAssetEvent(index: SearchIndexRepository, e: z.infer<typeof assetEventEnvelope>): Promise<boolean> {
  const groupId = Number(e.group_id);
  switch (e.type) {
    case 'file-saved':
    case 'file-processed':
    case 'file-data-updated':
    case 'addon-processed': {
      const asset = assetDataSchema.safeParse(e.data);
      if (!asset.success || asset.data.id !== e.asset_id) return false;
      return index.upsertAsset(groupId, e.version, asset.data, e.data_schema_id, e.addon_terms);
    }
    case 'file-deleted': {
      // The original sends the asset to the trash; conversions or addon results deleted alone leave it where it is,
      // without what went (events from before this field carry no asset: nothing to apply).
      const keys = deletion.safeParse(e.data).data?.keys ?? [];
      if (keys.includes('original')) return index.setDeleted(groupId, e.asset_id, e.version, true);
      const live = liveAfterDeletion.safeParse(e);
      if (!live.success || live.data.asset.id !== e.asset_id) return false;
      return index.upsertAsset(groupId, e.version, live.data.asset, e.data_schema_id, e.addon_terms);
    }
    case 'file-undeleted':
      return index.setDeleted(groupId, e.asset_id, e.version, false);
    default:
      return false;
  }
}

/** The durable consumer of every asset event of every group; idempotent (versions), so redeliveries are harmless. */
export function assetEventsWorker(nc: NatsConnection, index: SearchIndexRepository, logger: Logger): ConsumerWorker {
  return consumerWorker({
    nc,
    stream: ASSET_EVENTS,
    durable: INDEX_DURABLE,
    filterSubjects: ASSET_EVENTS_SUBJECTS,
    schema: assetEventEnvelope,
    deliverPolicy: 'all',
    concurrency: 8,
    handler: async (e, ctx) => {
      if (!assetEventTypeOf(ctx.subject)) return;
      await applyAssetEvent(index, e);
    },
    logger,
  });
}
