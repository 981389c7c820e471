import path from 'node:path';
import { migrate, readMigrations, type Pool } from '@dam/db';
import { OUTBOX_MIGRATION_SQL } from '@dam/outbox';

const DIR = path.join(__dirname, 'migrations');

/** Our SQL files plus the outbox table that @dam/outbox defines (kept in one list so the order is fixed). */
export async function migrateMetadata(pool: Pool): Promise<string[]> {
  const files = await readMigrations(DIR);
  return migrate(
    pool,
    [...files, { name: '002_outbox.sql', sql: OUTBOX_MIGRATION_SQL }].sort((a, b) => a.name.localeCompare(b.name)),
  );
}
