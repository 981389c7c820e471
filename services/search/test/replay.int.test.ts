import { jetstream } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { createPool, type Pool } from '@dam/db';
import { assetEventSubject, connectNats, ensureStreams } from '@dam/events';
import { createDatabase, startNats, type TestNats } from '@dam/testing';
import { SearchIndexRepository } from '../src/adapters/search-index.repository';
import { applyAssetEvent } from '../src/consumers/asset-events.consumer';
import { migrateSearch } from '../src/migrations';
import { assetData } from './fixtures';
import { replayIndex } from '../src/replay.use-case';

let server: TestNats;
let admin: NatsConnection;
let search: NatsConnection;
let pool: Pool;
let index: SearchIndexRepository;

beforeAll(async () => {
  server = await startNats();
  admin = await connectNats(server.url, 'test-admin', server.seed('admin'));
  await ensureStreams(admin);
  search = await connectNats(server.url, 'search', server.seed('search'));
  pool = createPool(await createDatabase('search_replay'));
  await migrateSearch(pool);
  index = new SearchIndexRepository(pool);
});
afterAll(async () => {
  await search?.close();
  await admin?.close();
  await pool?.end();
  await server?.stop();
});

const asset = assetData;

const snapshot = async () =>
  (await pool.query('SELECT asset_id, group_id, version, indexed, deleted, name FROM search_index ORDER BY asset_id')).rows;

describe('replay', () => {
  it('rebuilds the same model from the stream, as the search identity', async () => {
    const js = jetstream(admin);
    const publish = async (type: 'file-saved' | 'file-data-updated' | 'file-deleted', id: string, version: number, data: unknown) => {
      const env = { id: `${type}-${id}-${version}`, type, time: new Date().toISOString(), group_id: '1', asset_id: id, version, data };
      await js.publish(assetEventSubject(1, type), JSON.stringify(env), { msgID: env.id });
      return env;
    };
    const a = 'A'.repeat(32);
    const b = 'B'.repeat(32);
    const applied = [
      await publish('file-saved', a, 1, asset(a, 'first.txt')),
      await publish('file-data-updated', a, 2, asset(a, 'renamed.txt')),
      await publish('file-saved', b, 1, asset(b, 'other.txt')),
      await publish('file-deleted', b, 2, { id: b, event: 'file-deleted', keys: ['original'], status: 'OK', message: '' }),
    ];
    // The live model, as the consumer built it (applied in order here).
    for (const e of applied) await applyAssetEvent(index, e);
    const live = await snapshot();
    expect(live).toHaveLength(2);
    await pool.query(`UPDATE search_index SET name = 'corrupted'`);

    const result = await replayIndex(search, index);
    expect(result).toMatchObject({ events: 4, applied: 4 });
    expect(await snapshot()).toEqual(live);
  });
});
