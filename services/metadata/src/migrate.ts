/**
 * `run-service migrate metadata` (the init container): metadata's migrations as the service applies them at start,
 * the outbox table of @dam/outbox included (libs/db's migrate-cli reads only src/migrations: on an empty database it
 * failed at 015 for want of that table).
 */
import { migrateCommand } from '@dam/db';
import { migrateMetadata } from './migrations';

migrateCommand('metadata', migrateMetadata);
