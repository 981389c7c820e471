/**
 * `run-service migrate upload` (the init container): upload's migrations as the service applies them at start, the
 * Idempotency-Key table of @dam/db included (libs/db's migrate-cli reads only src/migrations).
 */
import { migrateCommand } from '@dam/db';
import { migrateUpload } from './migrations';

migrateCommand('upload', migrateUpload);
