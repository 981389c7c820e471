import { createPool, type Pool } from '@dam/db';
import { connectNats, SUBJECT_ASSETS_CHANGED } from '@dam/events';
import { createLogger } from '@dam/logging';
import { createDatabase, scaled, startNats, waitFor, type TestNats } from '@dam/testing';
import { assetChangeNotices } from '../src/adapters/asset-change.notices';
import { migrateMetadata } from '../src/migrations';

jest.setTimeout(scaled(60_000));

let nats: TestNats;
let pool: Pool;
let gateway: Awaited<ReturnType<typeof connectNats>>;
let relayNc: Awaited<ReturnType<typeof connectNats>>;
/** Every notice a gateway heard, in order. */
const heard: string[][] = [];

beforeAll(async () => {
  nats = await startNats();
  pool = createPool({ DATABASE_URL: await createDatabase('metadata_notices'), DB_POOL_MAX: 4 });
  await migrateMetadata(pool);
  // As the gateway hears them: its identity may subscribe, and metadata's may publish (the server's permissions).
  gateway = await connectNats(nats.url, 'gateway', nats.seed('gateway'));
  gateway.subscribe(SUBJECT_ASSETS_CHANGED, { callback: (_err, m) => void heard.push(m.json<string[]>()) });
  await gateway.flush();
  relayNc = await connectNats(nats.url, 'metadata', nats.seed('metadata'));
});

afterAll(async () => {
  await gateway?.close();
  await relayNc?.close();
  await pool?.end();
  await nats?.stop();
});

const insert = (id: string) =>
  `INSERT INTO assets (id, group_id, creator_id, name, size, checksum, content_type, status, object_key)
   VALUES ('${id}', 1, 1, 'a.png', 1, 'c', 'image/png', 'NOT_READY', 'k/${id}')`;
const flat = () => heard.flat();

describe('notices of changed assets (issue 33: the gateways drop their kept Get Data)', () => {
  it('announces every committed insert, update and delete of an asset, whoever wrote it, and nothing rolled back', async () => {
    const relay = await assetChangeNotices(pool, relayNc, createLogger({ service: 'metadata-test', level: 'silent' })).worker.start();
    try {
      // Listening announces `*` first: whatever changed before it was not heard.
      await waitFor(() => flat().includes('*'));
      heard.length = 0;

      await pool.query(insert('n1'));
      await pool.query(`UPDATE assets SET status = 'OK' WHERE id = 'n1'`);
      await waitFor(() => flat().filter((id) => id === 'n1').length === 2);

      // A transaction that changes many rows: once per asset, in few messages.
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        for (let i = 0; i < 1200; i += 1) await client.query(insert(`bulk${i}`));
        await client.query(`UPDATE assets SET data = '{"x":1}' WHERE id LIKE 'bulk%'`);
        // Rolled back: never announced.
        await client.query('SAVEPOINT s');
        await client.query(insert('ghost'));
        await client.query('ROLLBACK TO SAVEPOINT s');
        await client.query('COMMIT');
        await client.query('BEGIN');
        await client.query(insert('ghost2'));
        await client.query('ROLLBACK');
      } finally {
        client.release();
      }
      await waitFor(() => new Set(flat().filter((id) => id.startsWith('bulk'))).size === 1200);
      const bulkMessages = heard.filter((ids) => ids.some((id) => id.startsWith('bulk')));
      expect(bulkMessages.length).toBeLessThanOrEqual(10);
      expect(flat().filter((id) => id.startsWith('bulk')).length).toBe(1200);

      await pool.query(`DELETE FROM assets WHERE id = 'n1'`);
      await waitFor(() => flat().filter((id) => id === 'n1').length === 3);
      expect(flat()).not.toContain('ghost');
      expect(flat()).not.toContain('ghost2');
    } finally {
      await relay.stop();
    }
  });

  it('after losing its connection, listens again and announces `*` (notices meanwhile were not heard)', async () => {
    const relay = await assetChangeNotices(pool, relayNc, createLogger({ service: 'metadata-test', level: 'silent' }), 100).worker.start();
    try {
      await waitFor(() => flat().includes('*'));
      heard.length = 0;
      // The listening connection is ended by the server, as a restart or a failover would.
      await pool.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'LISTEN asset_changed%' AND pid <> pg_backend_pid()`);
      await waitFor(() => flat().includes('*'));
      await pool.query(insert('after'));
      await waitFor(() => flat().includes('after'));
    } finally {
      await relay.stop();
    }
  });

  it('settled(): every change committed before it is announced and at NATS, so the gateways have it before the answer', async () => {
    const notices = assetChangeNotices(pool, relayNc, createLogger({ service: 'metadata-test', level: 'silent' }));
    const relay = await notices.worker.start();
    try {
      await waitFor(() => flat().includes('*'));
      heard.length = 0;
      // Many times over, and several writers at once: no wait, no retry; each change is heard once settled() is.
      for (let i = 0; i < 60; i += 1) {
        const ids = [`s${i}a`, `s${i}b`, `s${i}c`];
        await Promise.all(
          ids.map(async (id) => {
            await pool.query(insert(id));
            await notices.settled();
            // The gateway's own round trip to the server: what the server had before it, the gateway has heard.
            await gateway.flush();
            expect(flat()).toContain(id);
          }),
        );
      }
    } finally {
      await relay.stop();
    }
    // Stopped: settled() answers at once.
    await notices.settled();
  });
});
