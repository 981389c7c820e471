/**
 * `pnpm --filter @dam/search replay`: rebuilds the search read model from ASSET_EVENTS (same environment as the
 * service: DATABASE_URL, NATS_URL, NATS_NKEY_SEED). Prints what it did as one JSON line.
 */
import { createPool } from '@dam/db';
import { connectNats } from '@dam/events';
import { runMain } from '@dam/http';
import { SearchIndexRepository } from './adapters/search-index.repository';
import { natsStreamReplay } from './adapters/stream-replay';
import { loadSearchConfig } from './config';
import { migrateSearch } from './migrations';
import { replayIndex } from './use-cases/replay-index.use-case';

async function main(): Promise<void> {
  const config = loadSearchConfig();
  const pool = createPool(config);
  await migrateSearch(pool);
  const nc = await connectNats(config.NATS_URL, 'search', config.NATS_NKEY_SEED);
  try {
    console.log(JSON.stringify(await replayIndex({ model: new SearchIndexRepository(pool), streams: natsStreamReplay(nc) })));
  } finally {
    await nc.drain();
    await pool.end();
  }
}

runMain(main);
