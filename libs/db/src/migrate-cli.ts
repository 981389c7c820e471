/**
 * Applies one service's migrations and exits: what a Kubernetes init container runs before the service starts
 * (`run-service migrate <service>` in the image) for a service whose migrations are its src/migrations folder. A
 * service with migrations defined in code too has its own entry, services/<service>/src/migrate.ts, which
 * run-service prefers. The same forward-only, idempotent migrations each service also applies at start, under the
 * same advisory lock: running it twice, or beside a starting replica, is safe.
 *
 *   DATABASE_URL=postgres://... node --import tsx libs/db/src/migrate-cli.ts <service>
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { migrate } from './index';
import { migrateCommand } from './migrate-command';

const service = process.argv[2] ?? '';
const dir = path.resolve(__dirname, '..', '..', '..', 'services', service, 'src', 'migrations');
if (!/^[a-z][a-z-]*$/.test(service) || !existsSync(dir)) {
  console.error(JSON.stringify({ level: 'error', msg: `no migrations for service "${service}"` }));
  process.exit(1);
}
migrateCommand(service, (pool) => migrate(pool, dir));
