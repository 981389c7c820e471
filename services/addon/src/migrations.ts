import path from 'node:path';
import { migrate, readMigrations, type Pool } from '@dam/db';

export async function migrateAddon(pool: Pool): Promise<string[]> {
  return migrate(pool, await readMigrations(path.join(__dirname, 'migrations')));
}
