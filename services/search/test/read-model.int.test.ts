import { createPool, type Pool } from '@dam/db';
import { createDatabase } from '@dam/testing';
import { SearchIndexRepository } from '../src/adapters/search-index.repository';
import { applyAssetEvent, applyCollectionMessage, applyPurge, applySchemaSaved } from '../src/use-cases/apply-read-model.use-case';
import { migrateSearch } from '../src/migrations';
import { assetData } from './fixtures';

let pool: Pool;
let index: SearchIndexRepository;

beforeAll(async () => {
  pool = createPool(await createDatabase('search_model'));
  await migrateSearch(pool);
  index = new SearchIndexRepository(pool);
});
afterAll(async () => pool.end());

const asset = assetData;
const event = (type: string, id: string, version: number, data: unknown) => ({
  id: `${type}-${id}-${version}`,
  type,
  group_id: '1',
  asset_id: id,
  version,
  data,
});
const row = async (id: string) =>
  (
    await pool.query<{ name: string; version: number; deleted: boolean; indexed: boolean }>(
      'SELECT name, version, deleted, indexed FROM search_index WHERE asset_id = $1',
      [id],
    )
  ).rows[0];

describe('the read model', () => {
  it('keeps the newest version whatever order events arrive in, and applies each once', async () => {
    const id = 'A'.repeat(32);
    expect(await applyAssetEvent(index, event('file-data-updated', id, 3, asset(id, 'new name.txt')))).toBe(true);
    expect(await applyAssetEvent(index, event('file-saved', id, 1, asset(id, 'old name.txt')))).toBe(false);
    expect(await applyAssetEvent(index, event('file-data-updated', id, 3, asset(id, 'new name.txt')))).toBe(false);
    expect(await row(id)).toEqual({ name: 'new name.txt', version: 3, deleted: false, indexed: true });
  });

  it("moves an asset to the trash and back by version, whichever of the deletion and the asset's data arrives first", async () => {
    const id = 'B'.repeat(32);
    await applyAssetEvent(index, event('file-saved', id, 1, asset(id, 'b.txt')));
    // Conversions deleted alone do not trash the asset.
    expect(await applyAssetEvent(index, event('file-deleted', id, 2, { id, event: 'file-deleted', keys: ['thumb'], status: 'OK', message: '' }))).toBe(false);
    expect(await applyAssetEvent(index, event('file-deleted', id, 3, { id, event: 'file-deleted', keys: ['original'], status: 'OK', message: '' }))).toBe(true);
    expect(await applyAssetEvent(index, event('file-undeleted', id, 2, { id }))).toBe(false);
    expect((await row(id))?.deleted).toBe(true);
    expect(await applyAssetEvent(index, event('file-undeleted', id, 4, { id }))).toBe(true);
    expect(await row(id)).toMatchObject({ deleted: false, indexed: true, name: 'b.txt' });

    // The deletion overtakes the asset's earlier events (a service restarted, events redelivered in parallel):
    // until they come the row is a placeholder no search returns, then the asset is found in the trash.
    const early = 'C'.repeat(32);
    const trash = { id: early, event: 'file-deleted', keys: ['original'], status: 'OK', message: '' };
    expect(await applyAssetEvent(index, event('file-deleted', early, 5, trash))).toBe(true);
    expect(await row(early)).toMatchObject({ deleted: true, indexed: false });
    expect(await applyAssetEvent(index, event('file-processed', early, 2, asset(early, 'late.txt')))).toBe(true);
    expect(await applyAssetEvent(index, event('file-saved', early, 1, asset(early, 'early.txt')))).toBe(false);
    expect(await applyAssetEvent(index, event('file-deleted', early, 5, trash))).toBe(false);
    expect(await row(early)).toEqual({ deleted: true, indexed: true, name: 'late.txt', version: 2 });
    // Data changed after the deletion (a late conversion) leaves the asset in the trash; a later undeletion brings it back.
    expect(await applyAssetEvent(index, event('file-processed', early, 6, asset(early, 'late.txt')))).toBe(true);
    expect(await row(early)).toMatchObject({ deleted: true, version: 6 });
    expect(await applyAssetEvent(index, event('file-undeleted', early, 7, { id: early }))).toBe(true);
    expect(await row(early)).toMatchObject({ deleted: false, indexed: true });
  });

  it('refuses a payload that is not the asset it names', async () => {
    const id = 'D'.repeat(32);
    expect(await applyAssetEvent(index, event('file-saved', id, 1, asset('E'.repeat(32), 'other.txt')))).toBe(false);
    expect(await applyAssetEvent(index, event('file-saved', id, 1, { nonsense: true }))).toBe(false);
    expect(await row(id)).toBeUndefined();
  });

  it("matches keywords in a schema's searchable fields, whichever of the asset and its schema arrives first", async () => {
    const matches = async (word: string): Promise<string[]> =>
      (
        await pool.query<{ asset_id: string }>(`SELECT asset_id FROM search_index WHERE group_id = 1 AND tsv @@ to_tsquery('simple', $1) ORDER BY asset_id`, [
          word,
        ])
      ).rows.map((r) => r.asset_id);
    const withData = (id: string, data: Record<string, unknown>) => ({ ...asset(id, `${id.slice(0, 4)}.txt`), data });
    const schema = (schema_id: number, props: Record<string, { searchable?: boolean; keyword?: boolean }>, at: string) => ({
      id: `s-${schema_id}-${at}`,
      group_id: 1,
      schema_id,
      service_properties: props,
      updated_at: at,
    });
    const early = 'F'.repeat(32);
    const late = 'G'.repeat(32);
    const other = 'H'.repeat(32);
    // The asset of schema 7 arrives before schema 7 is known: its searchable field matches once the schema does.
    await applyAssetEvent(index, {
      ...event('file-data-updated', early, 2, withData(early, { camera: { model: 'Leica' }, notes: 'secret', service_search_txt: 'harbour' })),
      data_schema_id: 7,
    });
    expect(await matches('leica')).toEqual([]);
    expect(await matches('harbour')).toEqual([early]);
    expect(
      await applySchemaSaved(
        index,
        schema(7, { 'camera.model': { searchable: true }, notes: { searchable: false }, '/lens': { keyword: true } }, '2026-11-23T10:00:00.000Z'),
      ),
    ).toBe(true);
    expect(await matches('leica')).toEqual([early]);
    expect(await matches('harbour')).toEqual([early]);
    expect(await matches('secret')).toEqual([]);
    // An asset arriving after its schema is indexed with it at once; another schema's asset is not.
    await applyAssetEvent(index, {
      ...event('file-data-updated', late, 2, withData(late, { camera: { model: 'Leica' }, lens: ['Summicron', '35mm'] })),
      data_schema_id: 7,
    });
    await applyAssetEvent(index, { ...event('file-data-updated', other, 2, withData(other, { camera: { model: 'Leica' } })), data_schema_id: 0 });
    expect(await matches('leica')).toEqual([early, late]);
    expect(await matches('summicron')).toEqual([late]);
    // The name's words stay when a schema changes; an older version of the schema changes nothing.
    expect(await applySchemaSaved(index, schema(7, { notes: { searchable: true } }, '2026-11-23T11:00:00.000Z'))).toBe(true);
    expect(await applySchemaSaved(index, schema(7, { 'camera.model': { searchable: true } }, '2026-11-23T10:30:00.000Z'))).toBe(false);
    expect(await matches('leica')).toEqual([]);
    expect(await matches('secret')).toEqual([early]);
    expect(await matches('ffff')).toEqual([early]);
    expect(await matches('harbour')).toEqual([early]);
  });

  it("keeps an asset's collections whether they arrive before or after the asset, newest list winning", async () => {
    const id = 'J'.repeat(32);
    const member = (ids: string[], version: number) =>
      applyCollectionMessage(index, `dam.collections.1.asset.${id}`, { id: `m-${version}`, group_id: 1, asset_id: id, collection_ids: ids, version });
    expect(await member(['c1', 'c2'], 2)).toBe(true);
    expect(await row(id)).toMatchObject({ indexed: false });
    await applyAssetEvent(index, event('file-saved', id, 1, asset(id, 'j.txt')));
    expect(await member(['c1'], 1)).toBe(false);
    const { rows } = await pool.query('SELECT indexed, collection_ids FROM search_index WHERE asset_id = $1', [id]);
    expect(rows[0]).toEqual({ indexed: true, collection_ids: ['c1', 'c2'] });
    expect(await applyCollectionMessage(index, 'dam.collections.1.other.x', {})).toBe(false);
  });

  it('forgets a purged asset for good: a tombstone above its events, whichever arrives first', async () => {
    const id = 'K'.repeat(32);
    const late = 'L'.repeat(32);
    await applyAssetEvent(index, event('file-saved', id, 1, asset(id, 'k.txt')));
    await applyAssetEvent(index, event('file-deleted', id, 2, { id, event: 'file-deleted', keys: ['original'], status: 'OK', message: '' }));
    expect(
      await applyPurge(index, {
        id: 'p1',
        group_id: 1,
        assets: [
          { id, version: 3 },
          { id: late, version: 2 },
        ],
      }),
    ).toBe(2);
    expect(await row(id)).toMatchObject({ indexed: false, deleted: true, version: 3 });
    // Events of the purged asset arriving later (a replay) change nothing.
    expect(await applyAssetEvent(index, event('file-saved', late, 1, asset(late, 'late.txt')))).toBe(false);
    expect(await applyAssetEvent(index, event('file-undeleted', id, 2, { id }))).toBe(false);
    expect(await row(late)).toMatchObject({ indexed: false, deleted: true });
    expect(await applyPurge(index, { id: 'p1', group_id: 1, assets: [{ id, version: 3 }] })).toBe(0);
  });

  it("keeps each asset's doc in search_docs, not in the rows a keyword search reads (issue 33), and drops it with a purge", async () => {
    const id = 'D'.repeat(32);
    const narrow = async () =>
      (
        await pool.query<{ in_row: unknown; doc: { name?: string } | null }>(
          'SELECT s.doc AS in_row, d.doc FROM search_index s LEFT JOIN search_docs d USING (asset_id) WHERE asset_id = $1',
          [id],
        )
      ).rows[0];
    expect(await applyAssetEvent(index, event('file-saved', id, 1, asset(id, 'first.txt')))).toBe(true);
    expect(await narrow()).toMatchObject({ in_row: null, doc: { name: 'first.txt' } });
    expect(await applyAssetEvent(index, event('file-data-updated', id, 2, asset(id, 'second.txt')))).toBe(true);
    // An older event writes neither the row nor its doc.
    expect(await applyAssetEvent(index, event('file-saved', id, 1, asset(id, 'first.txt')))).toBe(false);
    expect(await narrow()).toMatchObject({ in_row: null, doc: { name: 'second.txt' } });
    expect(await applyPurge(index, { id: 'p-doc', group_id: 1, assets: [{ id, version: 3 }] })).toBe(1);
    expect(await narrow()).toEqual({ in_row: null, doc: null });
    expect(await applyPurge(index, { id: 'p-doc', group_id: 1, assets: [{ id, version: 3 }] })).toBe(0);
  });

  it('indexes what addons found: labels for the tags facet and keyword search, words of the text, kept when a schema changes', async () => {
    const id = 'M'.repeat(32);
    const terms = { labels: ['bicycle', 'person'], words: ['Invoice', 'paid'] };
    await applyAssetEvent(index, { ...event('addon-processed', id, 2, { ...asset(id, 'm.png'), data: {} }), data_schema_id: 9, addon_terms: terms });
    const found = async (word: string) =>
      (await pool.query(`SELECT 1 FROM search_index WHERE asset_id = $1 AND tsv @@ to_tsquery('simple', $2)`, [id, word])).rowCount;
    expect(await found('bicycle')).toBe(1);
    expect(await found('invoice')).toBe(1);
    expect((await pool.query('SELECT labels FROM search_index WHERE asset_id = $1', [id])).rows[0]).toEqual({ labels: ['bicycle', 'person'] });
    await applySchemaSaved(index, { id: 's9', group_id: 1, schema_id: 9, service_properties: {}, updated_at: '2026-11-23T12:00:00.000Z' });
    expect(await found('invoice')).toBe(1);
    expect(await found('png')).toBe(1); // the name's words stay too
  });

  it("drops what a Delete of keys removed (CONTRACT §16): the addon's terms and its entry in the results, by version", async () => {
    const id = 'N'.repeat(32);
    const tagged = {
      ...asset(id, 'breakfast.jpg'),
      conversions: { thumb: { width: 2, height: 2, size: 5, public: false } },
      addons_info: { auto_tagging: { available: true } },
    };
    expect(await applyAssetEvent(index, { ...event('addon-processed', id, 2, tagged), addon_terms: { labels: ['cup'], words: [] } })).toBe(true);
    const found = async (word: string) =>
      (await pool.query(`SELECT 1 FROM search_index WHERE asset_id = $1 AND tsv @@ to_tsquery('simple', $2)`, [id, word])).rowCount;
    expect(await found('cup')).toBe(1);
    // Delete ["thumb", "auto_tagging"]: the asset stays live, as the event's `asset` now is, without tags.
    const payload = { id, event: 'file-deleted', keys: ['thumb', 'auto_tagging'], status: 'OK', message: 'Deleted: thumb, auto_tagging' };
    const after = { ...tagged, conversions: {}, addons_info: {} };
    const deleted = { ...event('file-deleted', id, 3, payload), data_schema_id: 0, asset: after };
    expect(await applyAssetEvent(index, deleted)).toBe(true);
    expect(await found('cup')).toBe(0);
    expect(await found('breakfast')).toBe(1);
    const stored = async () =>
      (await pool.query('SELECT labels, deleted, version, d.doc FROM search_index s JOIN search_docs d USING (asset_id) WHERE asset_id = $1', [id])).rows[0];
    expect(await stored()).toMatchObject({ labels: [], deleted: false, version: 3, doc: { conversions: {}, addons_info: {} } });
    // The tagging's event again (a redelivery) is older: it brings nothing back.
    expect(await applyAssetEvent(index, { ...event('addon-processed', id, 2, tagged), addon_terms: { labels: ['cup'], words: [] } })).toBe(false);
    expect(await found('cup')).toBe(0);
    // A deletion event of another asset's id in `asset`, or one without it (published before it was carried), changes nothing.
    expect(await applyAssetEvent(index, { ...deleted, version: 4, asset: { ...after, id: 'O'.repeat(32) } })).toBe(false);
    expect(await applyAssetEvent(index, event('file-deleted', id, 5, payload))).toBe(false);
    expect((await stored())?.version).toBe(3);
  });
});
