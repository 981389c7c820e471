/**
 * Applies one service's migrations and exits: what a Kubernetes init container runs before the service starts
 * (`run-service migrate <service>` in the image). The same forward-only, idempotent migrations each service also
 * applies at start, under the same advisory lock: running it twice, or beside a starting replica, is safe.
 *
 *   DATABASE_URL=postgres://... node --import tsx libs/db/src/migrate-cli.ts <service>
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { createPool, migrate } from './index';

async function main(): Promise<void> {
  const service = process.argv[2] ?? '';
  const dir = path.resolve(__dirname, '..', '..', '..', 'services', service, 'src', 'migrations');
  if (!/^[a-z][a-z-]*$/.test(service) || !existsSync(dir)) throw new Error(`no migrations for service "${service}"`);
  const url = process.env.DATABASE_URL;
  if (!url) throw new Error('DATABASE_URL is not set');
  const pool = createPool(url);
  try {
    const applied = await migrate(pool, dir);
    console.log(JSON.stringify({ level: 'info', service, applied, msg: applied.length > 0 ? 'migrations applied' : 'schema up to date' }));
  } finally {
    await pool.end();
  }
}

main().catch((error: unknown) => {
  console.error(JSON.stringify({ level: 'error', msg: error instanceof Error ? error.message : String(error) }));
  process.exit(1);
});
