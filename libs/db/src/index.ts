import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Pool, QueryConfig } from 'pg';

export type { Pool, PoolClient } from 'pg';

export { DatabaseTlsError } from './tls';
export { migrateCommand } from './migrate-command';
export { createPool, ping, withTransaction, type DbSettings } from './pool';
export { IDEMPOTENCY_MIGRATION, pgIdempotencyStore, type PgIdempotencyStore, type PgIdempotencyStoreOptions } from './idempotency-store';

const MIGRATION_FILE = /^\d{3,}_[\w-]+\.sql$/;
const MIGRATION_LOCK = 72_617_001;

export interface Migration {
  name: string;
  sql: string;
}

export async function readMigrations(dir: string): Promise<Migration[]> {
  const files = (await readdir(dir)).filter((f) => MIGRATION_FILE.test(f)).sort();
  return Promise.all(files.map(async (name) => ({ name, sql: await readFile(path.join(dir, name), 'utf8') })));
}

/**
 * Applies forward-only migrations in name order, each in its own transaction, once.
 * An advisory lock lets several replicas start at the same time without racing.
 * Returns the names applied by this call.
 */
export async function migrate(pool: Pool, migrations: Migration[] | string): Promise<string[]> {
  const list = typeof migrations === 'string' ? await readMigrations(migrations) : migrations;
  const client = await pool.connect();
  const applied: string[] = [];
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    await client.query('CREATE TABLE IF NOT EXISTS schema_migrations (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())');
    const done = new Set((await client.query<{ name: string }>('SELECT name FROM schema_migrations')).rows.map((r) => r.name));
    for (const m of list) {
      if (done.has(m.name)) continue;
      try {
        await client.query('BEGIN');
        // A migration may rewrite a large table: no 30 s bound on its statements (node-postgres reads a query's own
        // query_timeout over the pool's; its types do not list it).
        await client.query({ text: m.sql, query_timeout: 24 * 60 * 60 * 1000 } as QueryConfig);
        await client.query('INSERT INTO schema_migrations (name) VALUES ($1)', [m.name]);
        await client.query('COMMIT');
        applied.push(m.name);
      } catch (err) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw new Error(`migration ${m.name} failed: ${(err as Error).message}`);
      }
    }
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]).catch(() => undefined);
    client.release();
  }
  return applied;
}
