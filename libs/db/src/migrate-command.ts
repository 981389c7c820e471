import type { Pool } from 'pg';
import { createPool } from './pool';

/**
 * A migrate command (a Kubernetes init container's entry): runs `run` on a pool of DATABASE_URL (with its TLS
 * settings), prints one JSON line of what it applied, and exits 1 on failure. Used by libs/db's generic
 * migrate-cli.ts (a service's src/migrations folder) and by a service whose migrations are not all files
 * (metadata's src/migrate.ts: its outbox table comes from @dam/outbox).
 */
export function migrateCommand(service: string, run: (pool: Pool) => Promise<string[]>): void {
  const main = async (): Promise<void> => {
    const url = process.env.DATABASE_URL;
    if (!url) throw new Error('DATABASE_URL is not set');
    const pool = createPool(url);
    try {
      const applied = await run(pool);
      console.log(JSON.stringify({ level: 'info', service, applied, msg: applied.length > 0 ? 'migrations applied' : 'schema up to date' }));
    } finally {
      await pool.end();
    }
  };
  main().catch((error: unknown) => {
    console.error(JSON.stringify({ level: 'error', msg: error instanceof Error ? error.message : String(error) }));
    process.exit(1);
  });
}
