import { createPool, type Pool } from '@dam/db';
import { createDatabase } from '@dam/testing';
import { SearchIndexRepository } from '../src/adapters/search-index.repository';
import { applyAssetEvent } from '../src/consumers/asset-events.consumer';
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
const event = (type: string, id: string, version: number, data: unknown) => ({ id: `${type}-${id}-${version}`, type, group_id: '1', asset_id: id, version, data });
const row = async (id: string) => (await pool.query<{ name: string; version: number; deleted: boolean; indexed: boolean }>('SELECT name, version, deleted, indexed FROM search_index WHERE asset_id = $1', [id])).rows[0];

describe('the read model', () => {
  it('keeps the newest version whatever order events arrive in, and applies each once', async () => {
    const id = 'A'.repeat(32);
    expect(await applyAssetEvent(index, event('file-data-updated', id, 3, asset(id, 'new name.txt')))).toBe(true);
    expect(await applyAssetEvent(index, event('file-saved', id, 1, asset(id, 'old name.txt')))).toBe(false);
    expect(await applyAssetEvent(index, event('file-data-updated', id, 3, asset(id, 'new name.txt')))).toBe(false);
    expect(await row(id)).toEqual({ name: 'new name.txt', version: 3, deleted: false, indexed: true });
  });

  it('moves an asset to the trash and back by version; a deletion seen before the asset leaves it unindexed', async () => {
    const id = 'B'.repeat(32);
    await applyAssetEvent(index, event('file-saved', id, 1, asset(id, 'b.txt')));
    // Conversions deleted alone do not trash the asset.
    expect(await applyAssetEvent(index, event('file-deleted', id, 2, { id, event: 'file-deleted', keys: ['thumb'], status: 'OK', message: '' }))).toBe(false);
    expect(await applyAssetEvent(index, event('file-deleted', id, 3, { id, event: 'file-deleted', keys: ['original'], status: 'OK', message: '' }))).toBe(true);
    expect(await applyAssetEvent(index, event('file-undeleted', id, 2, { id }))).toBe(false);
    expect((await row(id))?.deleted).toBe(true);
    expect(await applyAssetEvent(index, event('file-undeleted', id, 4, { id }))).toBe(true);
    expect(await row(id)).toMatchObject({ deleted: false, indexed: true, version: 4 });

    const early = 'C'.repeat(32);
    await applyAssetEvent(index, event('file-deleted', early, 5, { id: early, event: 'file-deleted', keys: ['original'], status: 'OK', message: '' }));
    await applyAssetEvent(index, event('file-saved', early, 1, asset(early, 'late.txt')));
    expect(await row(early)).toMatchObject({ deleted: true, indexed: false, version: 5 });
  });

  it('refuses a payload that is not the asset it names', async () => {
    const id = 'D'.repeat(32);
    expect(await applyAssetEvent(index, event('file-saved', id, 1, asset('E'.repeat(32), 'other.txt')))).toBe(false);
    expect(await applyAssetEvent(index, event('file-saved', id, 1, { nonsense: true }))).toBe(false);
    expect(await row(id)).toBeUndefined();
  });
});
