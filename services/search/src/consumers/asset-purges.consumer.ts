import type { NatsConnection } from '@nats-io/nats-core';
import { ASSET_PURGES, ASSET_PURGES_SUBJECTS, assetPurgeSchema, consumerWorker, type AssetPurge, type ConsumerWorker } from '@dam/events';
import type { Logger } from '@dam/logging';
import type { SearchIndexRepository } from '../adapters/search-index.repository';

export const PURGES_DURABLE = 'search-purges';

/** Each purged asset leaves the model (a tombstone); returns how many rows changed. */
export async function applyPurge(index: SearchIndexRepository, p: AssetPurge): Promise<number> {
  let changed = 0;
  for (const a of p.assets) if (await index.setPurged(p.group_id, a.id, a.version)) changed += 1;
  return changed;
}

/** Assets purged from the trash: gone from every search, the trash's included. */
export function assetPurgesWorker(nc: NatsConnection, index: SearchIndexRepository, logger: Logger): ConsumerWorker {
  return consumerWorker({
    nc,
    stream: ASSET_PURGES,
    durable: PURGES_DURABLE,
    filterSubjects: ASSET_PURGES_SUBJECTS,
    schema: assetPurgeSchema,
    deliverPolicy: 'all',
    concurrency: 2,
    handler: async (p) => {
      await applyPurge(index, p);
    },
    logger,
  });
}
