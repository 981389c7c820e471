import type { Pool } from '@dam/db';
import type { SavedMatch, SearchIndex, SetOwner } from '../domain/ports';
import type { Facets, IndexedAsset, ResultSet, Scope, SearchRequest } from '../domain/search-request';
import { FACET_COLUMNS, orderOf, scoreOf, whereOf } from './search-query';

/**
 * The ids and scores of `ranked` (a query of `asset_id, score` ending in ORDER BY ... LIMIT) as two arrays in its
 * order. The aggregates take the rows in the order the sorted LIMIT hands them on (nothing between them reorders);
 * `array_agg(... ORDER BY rn)` over a row_number() sorted the 10,000 rows twice more (issue 33, about 3 ms).
 */
const rankedArrays = (ranked: string): string =>
  `SELECT coalesce(array_agg(asset_id), '{}') AS ids, coalesce(array_agg(score), '{}') AS scores FROM (${ranked}) r`;

/** The indexed assets among `ids` (an SQL array), as a page shows them: with their doc when `extended`. */
const pageAssets = (ids: string, extended: boolean): string =>
  extended
    ? // The doc from search_docs; a row a replica of the previous release wrote still holds its own.
      `SELECT s.asset_id, s.name, s.size, s.content_type, s.status, s.upload_time, coalesce(d.doc, s.doc) AS doc
       FROM search_index s LEFT JOIN search_docs d ON d.asset_id = s.asset_id WHERE s.asset_id = ANY(${ids}) AND s.indexed`
    : `SELECT s.asset_id, s.name, s.size, s.content_type, s.status, s.upload_time, NULL::jsonb AS doc FROM search_index s WHERE s.asset_id = ANY(${ids}) AND s.indexed`;

/**
 * The first page's assets read by the statement that stores the set (its CTE `stored` returns `first_ids`), as one
 * JSON array (issue 33: a statement and a round trip less per search, and the same snapshot as the set).
 */
const firstAssetsOf = (extended: boolean): string =>
  `(SELECT coalesce(jsonb_agg(to_jsonb(a)), '[]'::jsonb) FROM (${pageAssets('stored.first_ids', extended)}) a) AS first_assets`;

interface AssetRow {
  asset_id: string;
  name: string;
  size: string | number;
  content_type: string;
  status: string;
  upload_time: Date | string;
  doc: unknown;
}
const indexedAsset = (r: AssetRow): IndexedAsset => ({
  id: r.asset_id,
  name: r.name,
  size: Number(r.size),
  content_type: r.content_type,
  status: r.status,
  upload_time: new Date(r.upload_time),
  doc: r.doc,
});

interface StoredRow {
  first_ids: string[];
  first_scores: number[];
  total: number;
  capped: boolean;
  first_assets: AssetRow[];
}

const savedOf = (row: StoredRow): Omit<SavedMatch, 'facets'> => ({
  firstIds: row.first_ids,
  firstScores: row.first_scores.map(Number),
  total: row.total,
  capped: row.capped,
  firstAssets: row.first_assets.map(indexedAsset),
});

/** Searches of `search_index` in PostgreSQL: the match and its facets, and the assets a page shows. */
export class PgSearchIndex implements SearchIndex {
  constructor(private readonly pool: Pool) {}

  async match(request: SearchRequest, scope: Scope, limit: number): Promise<{ hits: Array<{ id: string; score: number }>; facets: Facets }> {
    const { sql, params, tsquery } = whereOf(request, scope);
    const score = scoreOf(tsquery);
    const orderParams = [...params];
    const order = orderOf(request, orderParams, tsquery !== undefined);
    // The match and the facets are two queries on two connections, run side by side.
    const [matched, facets] = await Promise.all([
      this.pool.query<{ asset_id: string; score: number }>(
        `SELECT asset_id, ${score}::real AS score FROM search_index WHERE ${sql} ORDER BY ${order} LIMIT ${Math.trunc(limit)}`,
        orderParams,
      ),
      this.facetCounts(request.facets, sql, params),
    ]);
    return { hits: matched.rows.map((r) => ({ id: r.asset_id, score: Number(r.score) })), facets };
  }

  /**
   * The match stored as a result set by one statement (the `result_sets` row ResultSetRepository reads): the ids are
   * ranked, capped and kept in the database, and only the first page's come back. The facets are counted beside it
   * on another connection and added to the row when asked for (the set's id is nobody's until this returns); with a
   * keyword, where the ranking reads every match anyway, by the same statement from the same scan.
   */
  async matchAndSave(
    request: SearchRequest,
    scope: Scope,
    cap: number,
    set: Pick<ResultSet, 'id' | 'page_size' | 'extended'>,
    owner: SetOwner,
    ttlMs: number,
  ): Promise<SavedMatch> {
    const { sql, params, tsquery } = whereOf(request, scope);
    const score = scoreOf(tsquery);
    const q = [...params];
    const order = orderOf(request, q, tsquery !== undefined);
    const p = (v: unknown) => {
      q.push(v);
      return `$${q.length}`;
    };
    const [n, pageSize] = [Math.trunc(cap), Math.trunc(set.page_size)];
    // The best cap + 1 matches as `match` finds them (ORDER BY ... LIMIT: a top-N sort, or the upload-time index),
    // aggregated in that order; the first cap are the set, one more says it is capped.
    if (tsquery && request.facets.length > 0) return this.matchFacetsAndSave(request, { sql, score, order, q, p, n, pageSize }, set, owner, ttlMs);
    const [stored, facets] = await Promise.all([
      this.pool.query<StoredRow>(
        `WITH s AS (${rankedArrays(`SELECT asset_id, ${score}::real AS score FROM search_index WHERE ${sql} ORDER BY ${order} LIMIT ${n + 1}`)})
         , stored AS (INSERT INTO result_sets (id, group_id, user_id, ids, scores, capped, page_size, extended, facets, expires_at)
         SELECT ${p(set.id)}, ${p(owner.groupId)}, ${p(owner.userId)}, ids[1:${n}], scores[1:${n}], cardinality(ids) > ${n}, ${pageSize}, ${p(set.extended)}, '{}'::jsonb,
                now() + make_interval(secs => ${p(ttlMs / 1000)}) FROM s
         RETURNING ids[1:${pageSize}] AS first_ids, scores[1:${pageSize}] AS first_scores, cardinality(ids) AS total, capped)
         SELECT stored.*, ${firstAssetsOf(set.extended)} FROM stored`,
        q,
      ),
      this.facetCounts(request.facets, sql, params),
    ]);
    if (request.facets.length > 0) await this.pool.query('UPDATE result_sets SET facets = $2 WHERE id = $1', [set.id, JSON.stringify(facets)]);
    const row = stored.rows[0];
    if (!row) throw new Error('the result set was not stored');
    return { ...savedOf(row), facets };
  }

  /**
   * A keyword search with facets (issue 33): ranking reads and scores every match, and the facets count every match,
   * so one scan feeds both (`f`, kept for the statement) instead of one on each of two connections, and the facets
   * are stored with the set by the same INSERT instead of an UPDATE after it. Same set, order and facets.
   */
  private async matchFacetsAndSave(
    request: SearchRequest,
    b: { sql: string; score: string; order: string; q: unknown[]; p: (v: unknown) => string; n: number; pageSize: number },
    set: Pick<ResultSet, 'id' | 'page_size' | 'extended'>,
    owner: SetOwner,
    ttlMs: number,
  ): Promise<SavedMatch> {
    const { sql, score, order, q, p, n, pageSize } = b;
    const wanted = [...new Set(request.facets)];
    const parts = this.facetParts(wanted, q, 'f');
    const data = (request.sort?.some((s) => s.field.startsWith('data.')) ?? false) || wanted.some((f) => f.startsWith('data.'));
    const stored = await this.pool.query<StoredRow & { facets: Facets }>(
      `WITH f AS MATERIALIZED (
         SELECT asset_id, ${score}::real AS score, name, size, upload_time, update_time, content_type, status, creator_id${data ? ', data' : ''}${
           wanted.includes('tags') ? ', labels' : ''
         }
         FROM search_index WHERE ${sql}),
       s AS (${rankedArrays(`SELECT asset_id, score FROM f ORDER BY ${order} LIMIT ${n + 1}`)}),
       c AS (${parts.join(' UNION ALL ')}),
       j AS (
         SELECT jsonb_object_agg(w.name, coalesce(
                  (SELECT jsonb_agg(jsonb_build_object('value', CASE WHEN w.name = 'creator_id' THEN to_jsonb(c.value::bigint) ELSE to_jsonb(c.value) END,
                                                       'count', c.count) ORDER BY c.count DESC, c.value)
                     FROM c WHERE c.i = w.k - 1), '[]'::jsonb)) AS facets
         FROM unnest(${p(wanted)}::text[]) WITH ORDINALITY AS w(name, k)),
       stored AS (INSERT INTO result_sets (id, group_id, user_id, ids, scores, capped, page_size, extended, facets, expires_at)
       SELECT ${p(set.id)}, ${p(owner.groupId)}, ${p(owner.userId)}, ids[1:${n}], scores[1:${n}], cardinality(ids) > ${n}, ${pageSize}, ${p(set.extended)},
              (SELECT facets FROM j),
              now() + make_interval(secs => ${p(ttlMs / 1000)}) FROM s
       RETURNING ids[1:${pageSize}] AS first_ids, scores[1:${pageSize}] AS first_scores, cardinality(ids) AS total, capped, facets)
       SELECT stored.*, ${firstAssetsOf(set.extended)} FROM stored`,
      q,
    );
    const row = stored.rows[0];
    if (!row) throw new Error('the result set was not stored');
    // As `facetCounts` answers them: facets in the order asked, `value` before `count` (jsonb orders keys its own way).
    const facets: Facets = Object.fromEntries(wanted.map((f) => [f, (row.facets[f] ?? []).map(({ value, count }) => ({ value, count }))]));
    return { ...savedOf(row), facets };
  }

  async assets(ids: string[]): Promise<IndexedAsset[]> {
    const rows = await this.pool.query<AssetRow>(pageAssets('$1', true), [ids]);
    return rows.rows.map(indexedAsset);
  }

  /**
   * Facet counts over the whole match, every facet from one pass (a materialized CTE), not one scan per facet.
   * `tags` counts the addons' object labels.
   */
  private async facetCounts(asked: string[], sql: string, params: unknown[]): Promise<Facets> {
    const facets: Facets = {};
    const wanted = [...new Set(asked)];
    if (wanted.length === 0) return facets;
    const facetParams = [...params];
    const parts = this.facetParts(wanted, facetParams, 'm');
    const counts = await this.pool.query<{ i: number; value: string | null; count: number }>(
      `WITH m AS MATERIALIZED (SELECT content_type, status, creator_id, data, labels FROM search_index WHERE ${sql})
       SELECT i, value, count FROM (${parts.join(' UNION ALL ')}) f ORDER BY i, count DESC, value`,
      facetParams,
    );
    for (const facet of wanted) facets[facet] = [];
    for (const row of counts.rows) {
      const facet = wanted[row.i] as string;
      (facets[facet] as Array<{ value: unknown; count: number }>).push({
        value: facet === 'creator_id' && row.value !== null ? Number(row.value) : row.value,
        count: row.count,
      });
    }
    return facets;
  }

  /** Each facet's counts (`i`, its place in `wanted`; `value` as text; the 100 most frequent) over the matches in `from`. */
  private facetParts(wanted: string[], params: unknown[], from: string): string[] {
    return wanted.map((facet, i) => {
      if (facet === 'tags')
        return `(SELECT ${i} AS i, t AS value, count(*)::int AS count FROM ${from}, unnest(${from}.labels) AS t GROUP BY 2 ORDER BY 3 DESC, 2 LIMIT 100)`;
      if (facet.startsWith('data.')) {
        params.push(facet.slice(5));
        const k = `$${params.length}`;
        return `(SELECT ${i} AS i, data ->> ${k} AS value, count(*)::int AS count FROM ${from} WHERE data ? ${k} GROUP BY 2 ORDER BY 3 DESC, 2 LIMIT 100)`;
      }
      const column = FACET_COLUMNS[facet] as string;
      return `(SELECT ${i} AS i, ${column}::text AS value, count(*)::int AS count FROM ${from} GROUP BY 2 ORDER BY 3 DESC, 2 LIMIT 100)`;
    });
  }
}
