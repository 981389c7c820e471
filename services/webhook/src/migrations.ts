import path from 'node:path';
import { migrate, readMigrations, type Pool } from '@dam/db';
import { OUTBOX_MIGRATION_SQL } from '@dam/outbox';

export async function migrateWebhook(pool: Pool): Promise<string[]> {
  const files = await readMigrations(path.join(__dirname, 'migrations'));
  // The outbox of its notices (006_failed_delivery_notices.sql writes them; main.ts relays them).
  return migrate(
    pool,
    [...files, { name: '005_outbox.sql', sql: OUTBOX_MIGRATION_SQL }].sort((a, b) => a.name.localeCompare(b.name)),
  );
}
