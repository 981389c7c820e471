import { withTransaction, type Pool } from '@dam/db';
import type { RunInTransaction } from '../domain/ports';
import { AssetRepository, ProcessedMessagesRepository } from './asset.repository';
import { OutboxAssetEventWriter } from './asset-event.outbox';
import { OutboxJobCommandWriter } from './job-command.outbox';
import { JobRepository } from './job.repository';
import { ObjectDeletionRepository } from './object-deletion.repository';
import { PublicObjectRepository } from './public-object.repository';
import { DataUpdateRepository } from './data-update.repository';
import { SchemaRepository } from './schema.repository';
import { CollectionRepository } from './collection.repository';
import type { JobTimings } from '../domain/job';

/** Binds the domain's transaction port to one PostgreSQL transaction: rows, outbox and dedupe commit together. */
export function pgTransactions(pool: Pool, timings?: JobTimings): RunInTransaction {
  return (fn) =>
    withTransaction(pool, (client) =>
      fn({
        assets: new AssetRepository(client),
        jobs: new JobRepository(client, timings),
        commands: new OutboxJobCommandWriter(client),
        deletions: new ObjectDeletionRepository(client),
        publicObjects: new PublicObjectRepository(client),
        schemas: new SchemaRepository(client),
        collections: new CollectionRepository(client),
        dataUpdates: new DataUpdateRepository(client),
        events: new OutboxAssetEventWriter(client),
        messages: new ProcessedMessagesRepository(client),
      }),
    );
}
