import { randomBytes } from 'node:crypto';
import { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import { hasPermission, PERMISSION, principalOf, readsOwnOnly } from '@dam/auth-tokens';
import { badRequest, forbidden, notFound } from '@dam/errors';
import type { Pool } from '@dam/db';
import { parsed, pathId, validate } from '@dam/http';
import { FACET_COLUMNS, orderOf, RESULT_CAP, searchRequest, whereOf, type SearchRequest } from '../domain/search-query';

export interface SearchRouteDeps {
  pool: Pool;
  resultSetTtlMs: number;
  /** `Sunset` of the deprecated paths. */
  sunset?: string;
}

interface ResultSetRow {
  id: string;
  ids: string[];
  scores: number[];
  capped: boolean;
  page_size: number;
  extended: boolean;
  facets: Record<string, Array<{ value: unknown; count: number }>>;
}

/** One page of a stored set: the assets in the set's order (an asset purged since, a tombstone now, is left out). */
async function pageOf(pool: Pool, set: ResultSetRow, page: number) {
  const from = (page - 1) * set.page_size;
  const ids = set.ids.slice(from, from + set.page_size);
  const rows = await pool.query<{ asset_id: string; name: string; size: string; content_type: string; status: string; upload_time: Date; doc: unknown }>(
    'SELECT asset_id, name, size, content_type, status, upload_time, doc FROM search_index WHERE asset_id = ANY($1) AND indexed',
    [ids],
  );
  const byId = new Map(rows.rows.map((r) => [r.asset_id, r]));
  const results = [];
  for (const [i, id] of ids.entries()) {
    const r = byId.get(id);
    if (!r) continue;
    const score = set.scores[from + i] ?? 0;
    results.push(
      set.extended
        ? { ...(r.doc as object), score }
        : { id, name: r.name, size: Number(r.size), content_type: r.content_type, status: r.status, upload_time: r.upload_time.toISOString(), score },
    );
  }
  return {
    search_result_id: set.id,
    page,
    pages: Math.max(1, Math.ceil(set.ids.length / set.page_size)),
    page_size: set.page_size,
    total: set.ids.length,
    total_is_capped: set.capped,
    results,
    facets: set.facets,
  };
}

/**
 * Facet counts over the whole match, every facet from one pass (a materialized CTE), not one scan per facet.
 * `tags` counts the addons' object labels.
 */
async function facetCounts(pool: Pool, asked: string[], sql: string, params: unknown[]): Promise<ResultSetRow['facets']> {
  const facets: ResultSetRow['facets'] = {};
  const wanted = [...new Set(asked)];
  if (wanted.length === 0) return facets;
  const facetParams = [...params];
  const parts = wanted.map((facet, i) => {
    if (facet === 'tags') return `(SELECT ${i} AS i, t AS value, count(*)::int AS count FROM m, unnest(m.labels) AS t GROUP BY 2 ORDER BY 3 DESC, 2 LIMIT 100)`;
    if (facet.startsWith('data.')) {
      facetParams.push(facet.slice(5));
      const k = `$${facetParams.length}`;
      return `(SELECT ${i} AS i, data ->> ${k} AS value, count(*)::int AS count FROM m WHERE data ? ${k} GROUP BY 2 ORDER BY 3 DESC, 2 LIMIT 100)`;
    }
    const column = FACET_COLUMNS[facet] as string;
    return `(SELECT ${i} AS i, ${column}::text AS value, count(*)::int AS count FROM m GROUP BY 2 ORDER BY 3 DESC, 2 LIMIT 100)`;
  });
  const counts = await pool.query<{ i: number; value: string | null; count: number }>(
    `WITH m AS MATERIALIZED (SELECT content_type, status, creator_id, data, labels FROM search_index WHERE ${sql})
     SELECT i, value, count FROM (${parts.join(' UNION ALL ')}) f ORDER BY i, count DESC, value`,
    facetParams,
  );
  for (const facet of wanted) facets[facet] = [];
  for (const row of counts.rows) {
    const facet = wanted[row.i] as string;
    (facets[facet] as Array<{ value: unknown; count: number }>).push({ value: facet === 'creator_id' && row.value !== null ? Number(row.value) : row.value, count: row.count });
  }
  return facets;
}

const searchResultNotFound = () => notFound('SEARCH_RESULT_NOT_FOUND', 'No such search result (unknown or expired)');

/** Request schemas as validated (exported for the OpenAPI agreement test in services/gateway/test); a result id of no set's form is an unknown set (404, CONTRACT §16). */
export const searchBodySchemas = { body: searchRequest };
export const searchPageSchemas = {
  params: z.object({ search_result_id: pathId(z.string().regex(/^[0-9a-f]{32}$/, 'must be a search result id'), searchResultNotFound), page: z.coerce.number().int().min(1).max(RESULT_CAP) }),
};

/**
 * Search (spec endpoint 19, CONTRACT §8) over the read model: the first page at once, the set stored for paging.
 * CREATOR callers see their own assets only; `trashed` is for administrators.
 */
export function searchRoutes(deps: SearchRouteDeps): Router {
  const router = Router();
  const { pool } = deps;

  const run = async (res: Response, body: SearchRequest) => {
    const p = principalOf(res);
    if (body.trashed && !hasPermission(p, PERMISSION.PURGE_TRASH)) throw forbidden('Only administrators search the trash', 'TRASH_SEARCH_FORBIDDEN');
    const { sql, params, tsquery } = whereOf(body, { groupId: p.group_id, userId: p.user_id, ...(readsOwnOnly(p) ? { creatorId: p.user_id } : {}) });
    const score = tsquery ? `ts_rank_cd(tsv, ${tsquery})` : '0';
    const orderParams = [...params];
    const order = orderOf(body, orderParams, tsquery !== undefined);
    // The match and the facets are two queries on two connections, run side by side.
    const [matched, facets] = await Promise.all([
      pool.query<{ asset_id: string; score: number }>(
        `SELECT asset_id, ${score}::real AS score FROM search_index WHERE ${sql} ORDER BY ${order} LIMIT ${RESULT_CAP + 1}`,
        orderParams,
      ),
      facetCounts(pool, body.facets, sql, params),
    ]);
    const capped = matched.rows.length > RESULT_CAP;
    const kept = matched.rows.slice(0, RESULT_CAP);
    const set: ResultSetRow = {
      id: randomBytes(16).toString('hex'),
      ids: kept.map((r) => r.asset_id),
      scores: kept.map((r) => Number(r.score)),
      capped,
      page_size: body.page_size,
      extended: body.extended,
      facets,
    };
    // Storing the set and reading its first page's assets do not depend on each other.
    const [, first] = await Promise.all([
      pool.query(
        `INSERT INTO result_sets (id, group_id, user_id, ids, scores, capped, page_size, extended, facets, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, now() + make_interval(secs => $10))`,
        [set.id, p.group_id, p.user_id, set.ids, set.scores, set.capped, set.page_size, set.extended, JSON.stringify(set.facets), deps.resultSetTtlMs / 1000],
      ),
      pageOf(pool, set, 1),
    ]);
    res.json(first);
  };

  const page = async (req: Request, res: Response) => {
    const { params } = parsed(searchPageSchemas, req, res);
    const p = principalOf(res);
    const found = await pool.query<ResultSetRow>(
      `SELECT id, ids, scores, capped, page_size, extended, facets FROM result_sets
       WHERE id = $1 AND group_id = $2 AND user_id = $3 AND expires_at > now()`,
      [params.search_result_id, p.group_id, p.user_id],
    );
    const set = found.rows[0];
    if (!set) throw searchResultNotFound();
    const pages = Math.max(1, Math.ceil(set.ids.length / set.page_size));
    if (params.page > pages) throw badRequest('PAGE_OUT_OF_RANGE', `The result has ${pages} page(s)`, [{ path: 'page', message: `at most ${pages}` }]);
    res.json(await pageOf(pool, set, params.page));
  };

  const deprecated = (successor: string) => (res: Response) => {
    res.setHeader('Deprecation', 'true');
    if (deps.sunset) res.setHeader('Sunset', deps.sunset);
    res.setHeader('Link', `<${successor}>; rel="successor-version"`);
  };

  router.post('/api/v1/assets/search', validate(searchBodySchemas), async (req, res) => run(res, parsed(searchBodySchemas, req, res).body));
  router.post('/api/v1/search', validate(searchBodySchemas), async (req, res) => {
    deprecated('/api/v1/assets/search')(res);
    await run(res, parsed(searchBodySchemas, req, res).body);
  });
  router.get('/api/v1/assets/search/:search_result_id/:page', validate(searchPageSchemas), page);
  router.get('/api/v1/search/:search_result_id/:page', validate(searchPageSchemas), async (req, res) => {
    deprecated(`/api/v1/assets/search/${String(req.params.search_result_id)}/${String(req.params.page)}`)(res);
    await page(req, res);
  });
  return router;
}
