import { randomBytes } from 'node:crypto';
import { badRequest, forbidden, notFound } from '@dam/errors';
import type { ResultSets, SearchIndex } from '../domain/ports';
import { RESULT_CAP, type IndexedAsset, type ResultSet, type SearchRequest, type SetPage } from '../domain/search-request';

export interface SearchDeps {
  index: SearchIndex;
  resultSets: ResultSets;
  resultSetTtlMs: number;
}

/** Who asks: its group, itself, whether it reads its own assets only (CREATOR) and whether it may search the trash. */
export interface Searcher {
  groupId: number;
  userId: number;
  ownOnly: boolean;
  maySearchTrash: boolean;
}

export const searchResultNotFound = () => notFound('SEARCH_RESULT_NOT_FOUND', 'No such search result (unknown or expired)');

const pagesOf = (total: number, pageSize: number): number => Math.max(1, Math.ceil(total / pageSize));

/** One page of a stored set: the assets in the set's order (an asset purged since, a tombstone now, is left out). */
function pageOf(index: SearchIndex, set: ResultSet, page: number) {
  const from = (page - 1) * set.page_size;
  return pageFrom(
    index,
    { ...set, total: set.ids.length, ids: set.ids.slice(from, from + set.page_size), scores: set.scores.slice(from, from + set.page_size) },
    page,
  );
}

async function pageFrom(index: SearchIndex, set: SetPage, page: number, known?: IndexedAsset[]) {
  const { ids } = set;
  const byId = new Map((known ?? (await index.assets(ids))).map((a) => [a.id, a]));
  const results = [];
  for (const [i, id] of ids.entries()) {
    const a = byId.get(id);
    if (!a) continue;
    const score = set.scores[i] ?? 0;
    results.push(
      set.extended
        ? { ...(a.doc as object), score }
        : { id, name: a.name, size: a.size, content_type: a.content_type, status: a.status, upload_time: a.upload_time.toISOString(), score },
    );
  }
  return {
    search_result_id: set.id,
    page,
    pages: pagesOf(set.total, set.page_size),
    page_size: set.page_size,
    total: set.total,
    total_is_capped: set.capped,
    results,
    facets: set.facets,
  };
}

export type SearchPage = Awaited<ReturnType<typeof pageFrom>>;

/**
 * Search (spec endpoint 19, CONTRACT §8): the first page at once, the set (at most RESULT_CAP ids) stored for
 * paging. CREATOR callers see their own assets only; `trashed` is for those who may purge the trash.
 */
export async function searchAssets(deps: SearchDeps, who: Searcher, request: SearchRequest): Promise<SearchPage> {
  if (request.trashed && !who.maySearchTrash) throw forbidden('Only administrators search the trash', 'TRASH_SEARCH_FORBIDDEN');
  const scope = { groupId: who.groupId, userId: who.userId, ...(who.ownOnly ? { creatorId: who.userId } : {}) };
  const id = randomBytes(16).toString('hex');
  if (deps.index.matchAndSave) {
    // Matched and stored where the model is: the set's ids stay in the database (issue 33: a keyword matching
    // 10,000 assets sent them to the service and back, half of a search's time).
    const saved = await deps.index.matchAndSave(
      request,
      scope,
      RESULT_CAP,
      { id, page_size: request.page_size, extended: request.extended },
      who,
      deps.resultSetTtlMs,
    );
    const set = { id, capped: saved.capped, page_size: request.page_size, extended: request.extended, facets: saved.facets };
    return pageFrom(deps.index, { ...set, total: saved.total, ids: saved.firstIds, scores: saved.firstScores }, 1, saved.firstAssets);
  }
  const { hits, facets } = await deps.index.match(request, scope, RESULT_CAP + 1);
  const kept = hits.slice(0, RESULT_CAP);
  const set: ResultSet = {
    id,
    ids: kept.map((h) => h.id),
    scores: kept.map((h) => h.score),
    capped: hits.length > RESULT_CAP,
    page_size: request.page_size,
    extended: request.extended,
    facets,
  };
  // Storing the set and reading its first page's assets do not depend on each other.
  const [, first] = await Promise.all([deps.resultSets.save(set, who, deps.resultSetTtlMs), pageOf(deps.index, set, 1)]);
  return first;
}

/** A later page of the caller's own stored set: 404 when unknown or expired, 400 past its last page. */
export async function searchPage(deps: SearchDeps, who: Searcher, setId: string, page: number): Promise<SearchPage> {
  const set = await deps.resultSets.findPage(setId, who, page);
  if (!set) throw searchResultNotFound();
  const pages = pagesOf(set.total, set.page_size);
  if (page > pages) throw badRequest('PAGE_OUT_OF_RANGE', `The result has ${pages} page(s)`, [{ path: 'page', message: `at most ${pages}` }]);
  return pageFrom(deps.index, set, page);
}
