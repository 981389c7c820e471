import { withTransaction, type Pool } from '@dam/db';
import type { RunInTransaction } from '../domain/ports';
import { AssetRepository, ProcessedMessagesRepository } from './asset.repository';
import { OutboxAssetEventWriter } from './asset-event.outbox';
import { JobRepository } from './job.repository';

/** Binds the domain's transaction port to one PostgreSQL transaction: rows, outbox and dedupe commit together. */
export function pgTransactions(pool: Pool): RunInTransaction {
  return (fn) =>
    withTransaction(pool, (client) =>
      fn({
        assets: new AssetRepository(client),
        jobs: new JobRepository(client),
        events: new OutboxAssetEventWriter(client),
        messages: new ProcessedMessagesRepository(client),
      }),
    );
}
