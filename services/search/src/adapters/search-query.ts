import type { Scope, SearchRequest } from '../domain/search-request';

/**
 * The PostgreSQL query builder of the search adapter: a request's WHERE clause and ORDER BY over `search_index`,
 * every value a parameter.
 */

/** Facets that are columns of the model (besides `tags` and `data.<field>`). */
export const FACET_COLUMNS: Readonly<Record<string, string>> = { content_type: 'content_type', creator_id: 'creator_id', status: 'status' };

/** A keyword query's words (letters and digits, lowercased, at most 20); the SQL makes them a prefix tsquery. */
export function queryWords(query: string): string[] {
  return query
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter(Boolean)
    .slice(0, 20);
}

/**
 * The prefix tsquery of the words in parameter `param` (a text[]): every word must match the start of a word, its
 * accents folded. Each word is folded first, then quoted as one lexeme: unaccent turns some letters into tsquery's
 * own syntax (ʼ into ', ː into :, ⑴ into (1)), which unquoted made the query invalid (500). A word that folds to
 * nothing a lexeme can hold drops out of the query. The whole tsquery is one scalar subquery, made once per statement
 * (an InitPlan) and then only read: as `to_tsquery('simple', (SELECT ...))` the subquery was the InitPlan and
 * to_tsquery (stable, not immutable) parsed its text again for every matched row that ts_rank_cd scored (issue 33:
 * 10,000 parses for `beach`, about a third of the ranking's time).
 */
export function prefixTsquery(param: string): string {
  return `(SELECT to_tsquery('simple', string_agg('''' || replace(replace(unaccent(w), '\\', '\\\\'), '''', '''''') || ''':*', ' & ')) FROM unnest(${param}::text[]) AS w)`;
}

/**
 * A match's relevance: `ts_rank` of the keyword's tsquery (0 without one). Weights count (a word in the name, weight A,
 * scores 1.0 where the searchable text's B scores 0.4) and so does how often a word occurs. `ts_rank_cd`, used before
 * (issue 33), also weighs the distance between matched words: about 8 ms of CPU more for the 10,000 matches of one
 * keyword, for an order that differs only among assets holding several of the words.
 */
export const scoreOf = (tsquery: string | undefined): string => (tsquery ? `ts_rank(tsv, ${tsquery})` : '0');

/** A name glob (`IMG_*`, `?`) as a LIKE pattern, with LIKE's own characters escaped. */
export function globToLike(glob: string): string {
  return glob
    .replace(/[\\%_]/g, (c) => `\\${c}`)
    .replace(/\*/g, '%')
    .replace(/\?/g, '_');
}

/** WHERE clause and parameters for a request; `$1` is always the group. */
export function whereOf(req: SearchRequest, scope: Scope): { sql: string; params: unknown[]; tsquery?: string } {
  const params: unknown[] = [scope.groupId];
  const p = (v: unknown) => {
    params.push(v);
    return `$${params.length}`;
  };
  const clauses = ['group_id = $1', 'indexed', req.trashed ? 'deleted' : 'NOT deleted'];
  if (scope.creatorId !== undefined) clauses.push(`creator_id = ${p(scope.creatorId)}`);
  const words = req.query ? queryWords(req.query) : [];
  const tsquery = words.length > 0 ? prefixTsquery(p(words)) : undefined;
  if (tsquery) clauses.push(`tsv @@ ${tsquery}`);
  const f = req.filters;
  if (f.name) clauses.push(`name ILIKE ${p(globToLike(f.name))}`);
  if (f.content_type?.length) {
    const alts = f.content_type.map((t) => (t.endsWith('/*') ? `content_type LIKE ${p(`${t.slice(0, -1)}%`)}` : `content_type = ${p(t)}`));
    clauses.push(`(${alts.join(' OR ')})`);
  }
  for (const field of ['upload_time', 'update_time'] as const) {
    const r = f[field];
    if (r?.from) clauses.push(`${field} >= ${p(r.from)}`);
    if (r?.to) clauses.push(`${field} <= ${p(r.to)}`);
  }
  if (f.size?.min !== undefined) clauses.push(`size >= ${p(f.size.min)}`);
  if (f.size?.max !== undefined) clauses.push(`size <= ${p(f.size.max)}`);
  if (f.status?.length) clauses.push(`status = ANY(${p(f.status)})`);
  if (f.creator_id !== undefined) clauses.push(`creator_id = ${p(f.creator_id)}`);
  // A collection the caller sees (its own, or shared); any other id, unknown or not visible, matches nothing.
  if (f.collection_id !== undefined) {
    const c = p(f.collection_id);
    clauses.push(
      `collection_ids @> ARRAY[${c}]::text[] AND EXISTS (SELECT 1 FROM search_collections c WHERE c.collection_id = ${c} AND c.group_id = $1
         AND NOT c.deleted AND (c.shared OR c.owner_id = ${p(scope.userId)}))`,
    );
  }
  for (const [field, want] of Object.entries(f.data ?? {})) {
    if (typeof want === 'object') {
      // Ranges compare numbers as numbers and anything else as text.
      for (const [op, bound] of [
        ['>=', want.from],
        ['<=', want.to],
      ] as const) {
        if (bound === undefined) continue;
        clauses.push(
          typeof bound === 'number'
            ? `(jsonb_typeof(data -> ${p(field)}) = 'number' AND (data ->> $${params.length})::numeric ${op} ${p(bound)})`
            : `(data ->> ${p(field)}) ${op} ${p(bound)}`,
        );
      }
    } else {
      clauses.push(`data @> ${p(JSON.stringify({ [field]: want }))}::jsonb`);
    }
  }
  return { sql: clauses.join(' AND '), params, ...(tsquery ? { tsquery } : {}) };
}

/**
 * ORDER BY for the sorts asked (default: relevance with a keyword, else newest first); ties by id, compared as bytes
 * (`COLLATE "C"`: the database's C.UTF-8 compares through strcoll, without abbreviated keys, and a keyword's scores
 * tie often, so the ~10,000-row sort of a keyword spent most of its time on ids; ids are ASCII, same order).
 */
export function orderOf(req: SearchRequest, params: unknown[], hasQuery: boolean): string {
  const sorts = req.sort?.length ? req.sort : [{ field: hasQuery ? 'relevance' : 'upload_time', order: 'desc' as const }];
  const parts = sorts.map(({ field, order }) => {
    const dir = order === 'asc' ? 'ASC' : 'DESC';
    if (field === 'relevance') return `score ${dir}`;
    if (field.startsWith('data.')) {
      params.push(field.slice(5));
      const key = `$${params.length}`;
      // Numbers sort as numbers, after that text; missing values last either way.
      return `(CASE WHEN jsonb_typeof(data -> ${key}) = 'number' THEN (data ->> ${key})::numeric END) ${dir} NULLS LAST, (data ->> ${key}) ${dir} NULLS LAST`;
    }
    return `${field} ${dir} NULLS LAST`;
  });
  return [...parts, 'asset_id COLLATE "C" ASC'].join(', ');
}
