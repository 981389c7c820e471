import { randomBytes } from 'node:crypto';
import { Client } from 'pg';

/** Admin URL of the shared test cluster (set by global setup, or given through DAM_TEST_PG_URL). */
export function testPgUrl(): string {
  const url = process.env.DAM_TEST_PG_URL;
  if (!url) {
    throw new Error('DAM_TEST_PG_URL is not set: run through jest (global setup starts PostgreSQL) or set it');
  }
  return url;
}

/** Creates a fresh, empty database on the shared cluster (or on the cluster of `adminUrl`) and returns its URL. */
export async function createDatabase(prefix = 'test', adminUrl = testPgUrl()): Promise<string> {
  const name = `${prefix
    .toLowerCase()
    .replace(/[^a-z0-9_]/g, '_')
    .slice(0, 40)}_${randomBytes(5).toString('hex')}`;
  const admin = new Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE "${name}"`);
  } finally {
    await admin.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}
