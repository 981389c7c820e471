import type { components, DamClient } from '@dam/client';
import type { AssetData } from './asset';

/**
 * The asset browser's search (CONTRACT §8) as URL parameters, so a search can be linked, reloaded and gone back
 * to: `q`, `type` (content types, repeated), `status` (repeated), `creator`, `sort` (`field:order`), `page`.
 */
export interface SearchState {
  q: string;
  types: string[];
  statuses: string[];
  creator?: number | undefined;
  sort: string;
  page: number;
}

export type SearchPage = Omit<components['schemas']['SearchPage'], 'results'> & { results: (AssetData & { score?: number })[] };

export const PAGE_SIZE = 24;
export const FACETS = ['content_type', 'status', 'tags', 'creator_id'];
export const SORTS: { value: string; label: string }[] = [
  { value: 'upload_time:desc', label: 'Newest first' },
  { value: 'upload_time:asc', label: 'Oldest first' },
  { value: 'update_time:desc', label: 'Recently changed' },
  { value: 'name:asc', label: 'Name, A to Z' },
  { value: 'size:desc', label: 'Largest first' },
  { value: 'relevance:desc', label: 'Best match' },
];

export function readSearchState(params: URLSearchParams): SearchState {
  const page = Number(params.get('page'));
  const creator = Number(params.get('creator'));
  const sort = params.get('sort') ?? '';
  return {
    q: params.get('q') ?? '',
    types: params.getAll('type'),
    statuses: params.getAll('status'),
    creator: Number.isInteger(creator) && creator > 0 ? creator : undefined,
    sort: SORTS.some((s) => s.value === sort) ? sort : 'upload_time:desc',
    page: Number.isInteger(page) && page > 1 ? page : 1,
  };
}

export function writeSearchState(s: SearchState): string {
  const p = new URLSearchParams();
  if (s.q) p.set('q', s.q);
  for (const t of s.types) p.append('type', t);
  for (const t of s.statuses) p.append('status', t);
  if (s.creator !== undefined) p.set('creator', String(s.creator));
  if (s.sort !== 'upload_time:desc') p.set('sort', s.sort);
  if (s.page > 1) p.set('page', String(s.page));
  const q = p.toString();
  return q ? `?${q}` : '';
}

type Status = 'OK' | 'NOT_READY' | 'ERROR' | 'ARCHIVED';
const STATUSES: readonly string[] = ['OK', 'NOT_READY', 'ERROR', 'ARCHIVED'];

/** The Search request body of a state (the first page; later pages are read from the stored result). */
export function searchBody(s: SearchState, opts: { trashed?: boolean } = {}): components['schemas']['SearchRequest'] {
  const [field = 'upload_time', order = 'desc'] = s.sort.split(':');
  const filters: NonNullable<components['schemas']['SearchRequest']['filters']> = {};
  if (s.types.length) filters.content_type = s.types;
  const statuses = s.statuses.filter((x): x is Status => STATUSES.includes(x));
  if (statuses.length) filters.status = statuses;
  if (s.creator !== undefined) filters.creator_id = s.creator;
  return {
    ...(s.q.trim() ? { query: s.q.trim() } : {}),
    filters,
    sort: [{ field, order: order === 'asc' ? 'asc' : 'desc' }],
    page_size: PAGE_SIZE,
    extended: true,
    facets: FACETS,
    trashed: opts.trashed === true,
  };
}

export class SearchError extends Error {
  constructor(readonly body: unknown) {
    super((body as { error?: { message?: string } } | undefined)?.error?.message ?? 'The search failed');
  }
}

/** The page of a state: a new search, then (past page 1) that page of the stored result. */
export async function runSearch(client: DamClient, s: SearchState, opts: { trashed?: boolean } = {}): Promise<SearchPage> {
  const first = await client.POST('/api/v1/assets/search', { body: searchBody(s, opts) });
  if (!first.data) throw new SearchError(first.error);
  const page = Math.min(s.page, Math.max(1, first.data.pages));
  if (page <= 1) return first.data as unknown as SearchPage;
  const next = await client.GET('/api/v1/assets/search/{search_result_id}/{page}', {
    params: { path: { search_result_id: first.data.search_result_id, page } },
  });
  if (!next.data) throw new SearchError(next.error);
  return next.data as unknown as SearchPage;
}
