import { jetstream } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { createPool, type Pool } from '@dam/db';
import {
  assetEventSubject,
  assetPurgeSubject,
  collectionMembershipSubject,
  collectionStateSubject,
  connectNats,
  dataSchemaSubject,
  ensureStreams,
} from '@dam/events';
import { createDatabase, startNats, type TestNats } from '@dam/testing';
import { SearchIndexRepository } from '../src/adapters/search-index.repository';
import { applyAssetEvent, applyCollectionMessage, applyPurge, applySchemaSaved } from '../src/use-cases/apply-read-model.use-case';
import { migrateSearch } from '../src/migrations';
import { assetData } from './fixtures';
import { replayIndex } from '../src/use-cases/replay-index.use-case';
import { natsStreamReplay } from '../src/adapters/stream-replay';

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
  (
    await pool.query(
      'SELECT asset_id, group_id, version, indexed, deleted, name, data_schema_id, tsv::text, collection_ids FROM search_index ORDER BY asset_id',
    )
  ).rows;
const collections = async () => (await pool.query('SELECT * FROM search_collections ORDER BY collection_id')).rows;

describe('replay', () => {
  it('rebuilds the same model from the stream, as the search identity', async () => {
    const js = jetstream(admin);
    const publish = async (type: 'file-saved' | 'file-data-updated' | 'file-deleted', id: string, version: number, data: unknown, schemaId?: number) => {
      const env = {
        id: `${type}-${id}-${version}`,
        type,
        time: new Date().toISOString(),
        group_id: '1',
        asset_id: id,
        version,
        ...(schemaId === undefined ? {} : { data_schema_id: schemaId }),
        data,
      };
      await js.publish(assetEventSubject(1, type), JSON.stringify(env), { msgID: env.id });
      return env;
    };
    const a = 'A'.repeat(32);
    const b = 'B'.repeat(32);
    const applied = [
      await publish('file-saved', a, 1, asset(a, 'first.txt')),
      await publish('file-data-updated', a, 2, { ...asset(a, 'renamed.txt'), data: { place: 'Lisbon' } }, 3),
      await publish('file-saved', b, 1, asset(b, 'other.txt')),
      await publish('file-deleted', b, 2, { id: b, event: 'file-deleted', keys: ['original'], status: 'OK', message: '' }),
    ];
    // Schema 3 makes `place` searchable: two versions, the stream keeps the last.
    const schema = (at: string, props: Record<string, { searchable?: boolean }>) => ({
      id: `schema-1-3-${at}`,
      group_id: 1,
      schema_id: 3,
      service_properties: props,
      updated_at: at,
    });
    const schemas = [schema('2026-11-23T10:00:00.000Z', {}), schema('2026-11-23T11:00:00.000Z', { place: { searchable: true } })];
    for (const s of schemas) await js.publish(dataSchemaSubject(1, 3), JSON.stringify(s), { msgID: s.id });
    // Asset a is in collection k (two lists; the stream keeps the last).
    const lists = [['k', 'old'], ['k']].map((ids, i) => ({
      subject: collectionMembershipSubject(1, a),
      body: { id: `m-${i}`, group_id: 1, asset_id: a, collection_ids: ids, version: i + 1 },
    }));
    const k = { subject: collectionStateSubject(1, 'k'), body: { id: 'c-k', group_id: 1, collection_id: 'k', owner_id: 1, shared: true, deleted: false } };
    for (const m of [...lists, k]) await js.publish(m.subject, JSON.stringify(m.body), { msgID: m.body.id });
    // The live model, as the consumers built it (applied in order here).
    for (const m of [...lists, k]) await applyCollectionMessage(index, m.subject, m.body);
    for (const s of schemas) await applySchemaSaved(index, s);
    for (const e of applied) await applyAssetEvent(index, e);
    // b, in the trash, is purged.
    const purge = { id: 'purge-1', group_id: 1, assets: [{ id: b, version: 3 }] };
    await js.publish(assetPurgeSubject(1), JSON.stringify(purge), { msgID: purge.id });
    await applyPurge(index, purge);
    expect((await pool.query(`SELECT asset_id FROM search_index WHERE tsv @@ to_tsquery('simple', 'lisbon')`)).rows).toEqual([{ asset_id: a }]);
    const live = await snapshot();
    const liveCollections = await collections();
    expect(live).toHaveLength(2);
    await pool.query(`UPDATE search_index SET name = 'corrupted'`);

    const result = await replayIndex({ model: index, streams: natsStreamReplay(search) });
    expect(result).toMatchObject({ events: 4, applied: 2, schemas: 1, collections: 2, purges: 1 });
    expect(await snapshot()).toEqual(live);
    expect(await collections()).toEqual(liveCollections);
    expect(live.find((r) => r.asset_id === a)?.collection_ids).toEqual(['k']);
    expect(live.find((r) => r.asset_id === b)).toMatchObject({ indexed: false, deleted: true, version: 3 });
  });
});
