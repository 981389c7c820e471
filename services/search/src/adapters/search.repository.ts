import type { Pool } from '@dam/db';
import type { SearchIndex } from '../domain/ports';
import type { Facets, IndexedAsset, Scope, SearchRequest } from '../domain/search-request';
import { FACET_COLUMNS, orderOf, whereOf } from './search-query';

/** Searches of `search_index` in PostgreSQL: the match and its facets, and the assets a page shows. */
export class PgSearchIndex implements SearchIndex {
  constructor(private readonly pool: Pool) {}

  async match(request: SearchRequest, scope: Scope, limit: number): Promise<{ hits: Array<{ id: string; score: number }>; facets: Facets }> {
    const { sql, params, tsquery } = whereOf(request, scope);
    const score = tsquery ? `ts_rank_cd(tsv, ${tsquery})` : '0';
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

  async assets(ids: string[]): Promise<IndexedAsset[]> {
    const rows = await this.pool.query<{ asset_id: string; name: string; size: string; content_type: string; status: string; upload_time: Date; doc: unknown }>(
      'SELECT asset_id, name, size, content_type, status, upload_time, doc FROM search_index WHERE asset_id = ANY($1) AND indexed',
      [ids],
    );
    return rows.rows.map((r) => ({
      id: r.asset_id,
      name: r.name,
      size: Number(r.size),
      content_type: r.content_type,
      status: r.status,
      upload_time: r.upload_time,
      doc: r.doc,
    }));
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
    const parts = wanted.map((facet, i) => {
      if (facet === 'tags')
        return `(SELECT ${i} AS i, t AS value, count(*)::int AS count FROM m, unnest(m.labels) AS t GROUP BY 2 ORDER BY 3 DESC, 2 LIMIT 100)`;
      if (facet.startsWith('data.')) {
        facetParams.push(facet.slice(5));
        const k = `$${facetParams.length}`;
        return `(SELECT ${i} AS i, data ->> ${k} AS value, count(*)::int AS count FROM m WHERE data ? ${k} GROUP BY 2 ORDER BY 3 DESC, 2 LIMIT 100)`;
      }
      const column = FACET_COLUMNS[facet] as string;
      return `(SELECT ${i} AS i, ${column}::text AS value, count(*)::int AS count FROM m GROUP BY 2 ORDER BY 3 DESC, 2 LIMIT 100)`;
    });
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
}
