import path from 'node:path';
import { migrate, type Pool } from '@dam/db';

/** auth's schema (src/migrations), applied in order; answers the names applied now. */
export async function migrateAuth(pool: Pool): Promise<string[]> {
  return migrate(pool, path.join(__dirname, 'migrations'));
}
