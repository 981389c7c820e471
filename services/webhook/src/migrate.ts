/**
 * `run-service migrate webhook` (the init container): webhook's migrations as the service applies them at start, the
 * outbox table of @dam/outbox included (libs/db's migrate-cli reads only src/migrations, and 006 needs that table).
 */
import { migrateCommand } from '@dam/db';
import { migrateWebhook } from './migrations';

migrateCommand('webhook', migrateWebhook);
