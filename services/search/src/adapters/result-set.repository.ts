import type { Pool } from '@dam/db';
import type { ResultSets, SetOwner } from '../domain/ports';
import type { ResultSet } from '../domain/search-request';

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

  async deleteExpired(): Promise<number> {
    return (await this.pool.query('DELETE FROM result_sets WHERE expires_at < now()')).rowCount ?? 0;
  }
}
