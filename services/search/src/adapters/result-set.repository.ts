import type { Pool } from '@dam/db';
import type { ResultSets, SetOwner } from '../domain/ports';
import type { ResultSet, SetPage } from '../domain/search-request';

/** Result sets in PostgreSQL (`result_sets`), each with its expiry. */
export class ResultSetRepository implements ResultSets {
  constructor(private readonly pool: Pool) {}

  async save(set: ResultSet, owner: SetOwner, ttlMs: number): Promise<void> {
    await this.pool.query(
      `INSERT INTO result_sets (id, group_id, user_id, ids, scores, capped, page_size, extended, facets, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, now() + make_interval(secs => $10))`,
      [set.id, owner.groupId, owner.userId, set.ids, set.scores, set.capped, set.page_size, set.extended, JSON.stringify(set.facets), ttlMs / 1000],
    );
  }

  async find(id: string, owner: SetOwner): Promise<ResultSet | undefined> {
    const found = await this.pool.query<ResultSet>(
      `SELECT id, ids, scores, capped, page_size, extended, facets FROM result_sets
       WHERE id = $1 AND group_id = $2 AND user_id = $3 AND expires_at > now()`,
      [id, owner.groupId, owner.userId],
    );
    return found.rows[0];
  }

  /**
   * The page sliced where the set is (issue 33): reading the whole set sent up to 10,000 ids and scores to the service
   * and parsed them there, for every page asked.
   */
  async findPage(id: string, owner: SetOwner, page: number): Promise<SetPage | undefined> {
    const found = await this.pool.query<SetPage>(
      `SELECT id, capped, page_size, extended, facets, cardinality(ids) AS total,
              ids[($4 - 1) * page_size + 1 : $4 * page_size] AS ids, scores[($4 - 1) * page_size + 1 : $4 * page_size] AS scores
       FROM result_sets WHERE id = $1 AND group_id = $2 AND user_id = $3 AND expires_at > now()`,
      [id, owner.groupId, owner.userId, Math.trunc(page)],
    );
    const row = found.rows[0];
    return row && { ...row, scores: row.scores.map(Number) };
  }

  async deleteExpired(): Promise<number> {
    return (await this.pool.query('DELETE FROM result_sets WHERE expires_at < now()')).rowCount ?? 0;
  }
}
