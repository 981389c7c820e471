import { AppError } from '@dam/errors';
import { ASSET_EVENTS, ASSET_PURGES, COLLECTIONS, DATA_SCHEMAS } from '@dam/events';
import type { AddonTerms, ReadModel, ResultSets, SearchIndex, SetOwner } from '../src/domain/ports';
import { RESULT_CAP, searchRequest, type IndexedAsset, type ResultSet, type Scope } from '../src/domain/search-request';
import { READ_MODEL_CONSUMERS } from '../src/consumers/read-model.consumers';
import { READ_MODEL_FEEDS } from '../src/use-cases/apply-read-model.use-case';
import { applyAssetEvent, applyPurge } from '../src/use-cases/apply-read-model.use-case';
import { searchAssets, searchPage, type Searcher } from '../src/use-cases/search-assets.use-case';
import { assetData } from './fixtures';

/** Search's use cases over in-memory ports: no PostgreSQL, no NATS. */

const asset = (n: number): IndexedAsset => ({
  id: `a${n}`,
  name: `n${n}.txt`,
  size: n,
  content_type: 'text/plain',
  status: 'OK',
  upload_time: new Date(Date.UTC(2026, 10, 1, 0, 0, n)),
  doc: { id: `a${n}`, extra: true },
});

/** An index holding `count` assets (a0…), matched in that order; records the scope of each match. */
function memoryIndex(count: number) {
  const assets = new Map(Array.from({ length: count }, (_, n) => [`a${n}`, asset(n)]));
  const scopes: Scope[] = [];
  const index: SearchIndex = {
    match: async (_request, scope, limit) => {
      scopes.push(scope);
      return {
        hits: [...assets.keys()].slice(0, limit).map((id, i) => ({ id, score: 1 / (i + 1) })),
        facets: { status: [{ value: 'OK', count: assets.size }] },
      };
    },
    assets: async (ids) => ids.flatMap((id) => assets.get(id) ?? []),
  };
  return { index, assets, scopes };
}

function memoryResultSets() {
  const sets = new Map<string, { set: ResultSet; owner: SetOwner }>();
  const resultSets: ResultSets = {
    save: async (set, owner) => void sets.set(set.id, { set: structuredClone(set), owner: { groupId: owner.groupId, userId: owner.userId } }),
    find: async (id, owner) => {
      const found = sets.get(id);
      return found && found.owner.groupId === owner.groupId && found.owner.userId === owner.userId ? found.set : undefined;
    },
    findPage: async (id, owner, page) => {
      const found = sets.get(id);
      if (!found || found.owner.groupId !== owner.groupId || found.owner.userId !== owner.userId) return undefined;
      const { ids, scores, ...rest } = found.set;
      const from = (page - 1) * rest.page_size;
      return { ...rest, total: ids.length, ids: ids.slice(from, from + rest.page_size), scores: scores.slice(from, from + rest.page_size) };
    },
    deleteExpired: async () => 0,
  };
  return { resultSets, sets };
}

const admin: Searcher = { groupId: 1, userId: 10, ownOnly: false, maySearchTrash: true };
const creator: Searcher = { groupId: 1, userId: 11, ownOnly: true, maySearchTrash: false };
const request = (body: unknown) => searchRequest.parse(body);
const code = async (p: Promise<unknown>) =>
  p.then(
    () => 'resolved',
    (err: unknown) => (err instanceof AppError ? err.code : String(err)),
  );

describe('search use cases', () => {
  it('answers the first page and stores the set for its maker only', async () => {
    const { index } = memoryIndex(5);
    const { resultSets, sets } = memoryResultSets();
    const deps = { index, resultSets, resultSetTtlMs: 60_000 };
    const first = await searchAssets(deps, admin, request({ page_size: 2 }));
    expect(first).toMatchObject({
      page: 1,
      pages: 3,
      total: 5,
      total_is_capped: false,
      results: [
        { id: 'a0', score: 1, size: 0 },
        { id: 'a1', score: 0.5 },
      ],
    });
    expect(sets.size).toBe(1);
    expect((await searchPage(deps, admin, first.search_result_id, 3)).results.map((r) => (r as { id: string }).id)).toEqual(['a4']);
    expect(await code(searchPage(deps, creator, first.search_result_id, 1))).toBe('SEARCH_RESULT_NOT_FOUND');
    expect(await code(searchPage(deps, admin, first.search_result_id, 4))).toBe('PAGE_OUT_OF_RANGE');
  });

  it('keeps at most RESULT_CAP ids and says so', async () => {
    const { index } = memoryIndex(RESULT_CAP + 3);
    const { resultSets, sets } = memoryResultSets();
    const first = await searchAssets({ index, resultSets, resultSetTtlMs: 1 }, admin, request({}));
    expect(first).toMatchObject({ total: RESULT_CAP, total_is_capped: true });
    expect([...sets.values()][0]?.set.ids).toHaveLength(RESULT_CAP);
  });

  it('limits a creator to its own assets and the trash to those who may purge it', async () => {
    const { index, scopes } = memoryIndex(1);
    const { resultSets, sets } = memoryResultSets();
    const deps = { index, resultSets, resultSetTtlMs: 1 };
    await searchAssets(deps, creator, request({}));
    expect(scopes[0]).toEqual({ groupId: 1, userId: 11, creatorId: 11 });
    expect(await code(searchAssets(deps, creator, request({ trashed: true })))).toBe('TRASH_SEARCH_FORBIDDEN');
    expect(sets.size).toBe(1);
    await searchAssets(deps, admin, request({ trashed: true }));
    expect(scopes[1]).toEqual({ groupId: 1, userId: 10 });
  });

  it('lets an index that can store its match keep the set where it is made: no ids through the service, the first page from what it answers (issue 33)', async () => {
    const { index, assets } = memoryIndex(0);
    for (const n of [0, 1, 2]) assets.set(`a${n}`, asset(n));
    const stored: Array<{ id: string; page_size: number; owner: SetOwner; ttlMs: number }> = [];
    index.matchAndSave = async (_request, _scope, cap, set, owner, ttlMs) => {
      expect(cap).toBe(RESULT_CAP);
      stored.push({ id: set.id, page_size: set.page_size, owner: { groupId: owner.groupId, userId: owner.userId }, ttlMs });
      return { firstIds: ['a2', 'gone', 'a0'], firstScores: [0.9, 0.8, 0.7], total: 42, capped: true, facets: { status: [{ value: 'OK', count: 42 }] } };
    };
    const { resultSets, sets } = memoryResultSets();
    const first = await searchAssets({ index, resultSets, resultSetTtlMs: 5_000 }, admin, request({ page_size: 3 }));
    expect(sets.size).toBe(0);
    expect(stored).toEqual([{ id: first.search_result_id, page_size: 3, owner: { groupId: 1, userId: 10 }, ttlMs: 5_000 }]);
    expect(first).toMatchObject({
      page: 1,
      pages: 14,
      page_size: 3,
      total: 42,
      total_is_capped: true,
      facets: { status: [{ value: 'OK', count: 42 }] },
      results: [
        { id: 'a2', score: 0.9 },
        { id: 'a0', score: 0.7 },
      ],
    });
  });

  it('leaves out of a page what was purged since, and shows the whole asset when extended', async () => {
    const { index, assets } = memoryIndex(3);
    const { resultSets } = memoryResultSets();
    const deps = { index, resultSets, resultSetTtlMs: 1 };
    const first = await searchAssets(deps, admin, request({ page_size: 3, extended: true }));
    expect(first.results[0]).toEqual({ id: 'a0', extra: true, score: 1 });
    assets.delete('a1');
    expect((await searchPage(deps, admin, first.search_result_id, 1)).results.map((r) => (r as { id: string }).id)).toEqual(['a0', 'a2']);
  });
});

describe('read model', () => {
  const calls: string[] = [];
  const model: ReadModel = {
    upsertAsset: async (g, v, a, schema?: number, _terms?: AddonTerms) => (calls.push(`upsert ${g} ${a.id} ${v} ${schema ?? 0}`), true),
    setDeleted: async (g, id, v, deleted) => (calls.push(`${deleted ? 'trash' : 'restore'} ${g} ${id} ${v}`), true),
    saveSchema: async () => true,
    setMemberships: async () => true,
    setPurged: async (_g, id) => id !== 'gone',
    saveCollection: async () => undefined,
  };
  const event = (type: string, data: unknown, extra: object = {}) => ({ id: 'e', type, group_id: '3', asset_id: 'X', version: 4, data, ...extra });

  it('applies each asset event by its type, and nothing for another asset or type', async () => {
    calls.length = 0;
    expect(await applyAssetEvent(model, event('file-saved', assetData('X', 'x.txt'), { data_schema_id: 2 }))).toBe(true);
    expect(await applyAssetEvent(model, event('file-saved', assetData('Y', 'y.txt')))).toBe(false);
    expect(await applyAssetEvent(model, event('file-deleted', { keys: ['original'] }))).toBe(true);
    expect(await applyAssetEvent(model, event('file-deleted', { keys: ['thumb'] }, { asset: assetData('X', 'x.txt') }))).toBe(true);
    expect(await applyAssetEvent(model, event('file-deleted', { keys: ['thumb'] }))).toBe(false);
    expect(await applyAssetEvent(model, event('file-undeleted', {}))).toBe(true);
    expect(await applyAssetEvent(model, event('something-else', {}))).toBe(false);
    expect(calls).toEqual(['upsert 3 X 4 2', 'trash 3 X 4', 'upsert 3 X 4 0', 'restore 3 X 4']);
    expect(
      await applyPurge(model, {
        id: 'p',
        group_id: 3,
        assets: [
          { id: 'X', version: 5 },
          { id: 'gone', version: 5 },
        ],
      }),
    ).toBe(1);
  });

  it('follows four streams under four durables', () => {
    expect(READ_MODEL_CONSUMERS.map((c) => [READ_MODEL_FEEDS[c.feed].stream, c.durable])).toEqual([
      [ASSET_EVENTS, 'search-index'],
      [DATA_SCHEMAS, 'search-schemas'],
      [COLLECTIONS, 'search-collections'],
      [ASSET_PURGES, 'search-purges'],
    ]);
  });
});
