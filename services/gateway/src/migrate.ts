/**
 * `run-service migrate gateway` (the init container): gateway's migrations as the service applies them at start, the
 * Idempotency-Key table of @dam/db included (libs/db's migrate-cli reads only src/migrations).
 */
import { migrateCommand } from '@dam/db';
import { migrateGateway } from './migrations';

migrateCommand('gateway', migrateGateway);
