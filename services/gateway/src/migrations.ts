import path from 'node:path';
import { IDEMPOTENCY_MIGRATION, migrate, readMigrations, type Pool } from '@dam/db';

const DIR = path.join(__dirname, 'migrations');

/** gateway's schema: the Idempotency-Key table that @dam/db defines, and any SQL files of src/migrations, in name order. */
export async function migrateGateway(pool: Pool): Promise<string[]> {
  const files = await readMigrations(DIR);
  return migrate(
    pool,
    [...files, IDEMPOTENCY_MIGRATION].sort((a, b) => a.name.localeCompare(b.name)),
  );
}
