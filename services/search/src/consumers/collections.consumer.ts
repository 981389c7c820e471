import { z } from 'zod';
import type { NatsConnection } from '@nats-io/nats-core';
import { COLLECTIONS, COLLECTIONS_SUBJECTS, collectionMembershipSchema, collectionStateSchema, consumerWorker, type ConsumerWorker } from '@dam/events';
import type { Logger } from '@dam/logging';
import type { SearchIndexRepository } from '../adapters/search-index.repository';

export const COLLECTIONS_DURABLE = 'search-collections';

/** Applies one COLLECTIONS message by its subject: an asset's memberships, or a collection's state. */
export async function applyCollectionMessage(index: SearchIndexRepository, subject: string, body: unknown): Promise<boolean> {
  const kind = subject.split('.')[3];
  if (kind === 'asset') {
    const m = collectionMembershipSchema.safeParse(body);
    return m.success && index.setMemberships(m.data.group_id, m.data.asset_id, m.data.collection_ids, m.data.version);
  }
  if (kind === 'collection') {
    const c = collectionStateSchema.safeParse(body);
    if (!c.success) return false;
    await index.saveCollection(c.data);
    return true;
  }
  return false;
}

/** Collections as metadata changes them; one at a time, in stream order (a collection's last message is its state). */
export function collectionsWorker(nc: NatsConnection, index: SearchIndexRepository, logger: Logger): ConsumerWorker {
  return consumerWorker({
    nc,
    stream: COLLECTIONS,
    durable: COLLECTIONS_DURABLE,
    filterSubjects: COLLECTIONS_SUBJECTS,
    schema: z.unknown(),
    deliverPolicy: 'all',
    concurrency: 1,
    handler: async (body, ctx) => {
      await applyCollectionMessage(index, ctx.subject, body);
    },
    logger,
  });
}
