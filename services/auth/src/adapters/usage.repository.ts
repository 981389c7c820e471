import { withTransaction, type Pool } from '@dam/db';
import { GAUGE_METRICS, type UsageMetric, type UsageRecord } from '@dam/events';

import type { UsagePeriod, UsageSeries, UsageStore } from '../domain/ports';

export type { UsagePeriod, UsageSeries } from '../domain/ports';
const PERIOD_SQL: Record<UsagePeriod, string> = { '1h': '1 hour', '24h': '1 day', '7d': '7 days' };
const TRUNC: Record<UsagePeriod, string> = { '1h': 'hour', '24h': 'day', '7d': 'day' };

/** `usage_records`, `usage_hours` and `usage_gauges`: usage statistics as auth keeps them. */
export class UsageRepository implements UsageStore {
  constructor(private readonly pool: Pool) {}

  /** Counts a record once, whatever number of times it arrives; returns whether it was new. */
  async record(r: UsageRecord): Promise<boolean> {
    return withTransaction(this.pool, async (client) => {
      const fresh = await client.query('INSERT INTO usage_records (id) VALUES ($1) ON CONFLICT (id) DO NOTHING', [r.id]);
      if ((fresh.rowCount ?? 0) === 0) return false;
      if (GAUGE_METRICS.has(r.metric)) {
        await client.query(
          `INSERT INTO usage_gauges (group_id, metric, user_id, at, value) VALUES ($1, $2, $3, $4, $5)
           ON CONFLICT (group_id, metric, user_id, at) DO UPDATE SET value = EXCLUDED.value`,
          [Number(r.group_id), r.metric, r.user_id, r.end, r.value],
        );
      } else {
        await client.query(
          `INSERT INTO usage_hours (group_id, metric, hour, user_id, value) VALUES ($1, $2, date_trunc('hour', $3::timestamptz), $4, $5)
           ON CONFLICT (group_id, metric, hour, user_id) DO UPDATE SET value = usage_hours.value + EXCLUDED.value`,
          [Number(r.group_id), r.metric, r.start, r.user_id, r.value],
        );
      }
      return true;
    });
  }

  /**
   * Buckets of `period` from `from` (truncated to the hour, or the day) to `to`: counters add up what fell in each
   * bucket; a gauge shows, per bucket, the group's latest snapshot before the bucket's end (every user measured
   * at one time; a user absent from it counts 0). `total` is the sum of a counter's buckets, or a gauge's latest
   * value before `to`.
   */
  async series(q: { groupId: number; metric: UsageMetric; from: Date; to: Date; period: UsagePeriod; userId?: number }): Promise<UsageSeries> {
    const step = PERIOD_SQL[q.period];
    const buckets = `SELECT b AS start, b + interval '${step}' AS stop
      FROM generate_series(date_trunc('${TRUNC[q.period]}', $3::timestamptz), $4::timestamptz - interval '1 microsecond', interval '${step}') AS b`;
    const params = [q.groupId, q.metric, q.from.toISOString(), q.to.toISOString(), q.userId ?? null];
    const sql = GAUGE_METRICS.has(q.metric)
      ? `SELECT k.start, coalesce((SELECT sum(g.value) FROM usage_gauges g
             WHERE g.group_id = $1 AND g.metric = $2 AND ($5::int IS NULL OR g.user_id = $5)
               AND g.at = (SELECT max(at) FROM usage_gauges WHERE group_id = $1 AND metric = $2 AND at < least(k.stop, $4::timestamptz))), 0) AS value
         FROM (${buckets}) k ORDER BY k.start`
      : `SELECT k.start, coalesce((SELECT sum(value) FROM usage_hours
             WHERE group_id = $1 AND metric = $2 AND hour >= k.start AND hour < k.stop AND ($5::int IS NULL OR user_id = $5)), 0) AS value
         FROM (${buckets}) k ORDER BY k.start`;
    const { rows } = await this.pool.query<{ start: Date; value: number }>(sql, params);
    const series = rows.map((r) => ({ start: r.start.toISOString(), value: Number(r.value) }));
    const total = GAUGE_METRICS.has(q.metric) ? (series.at(-1)?.value ?? 0) : series.reduce((sum, b) => sum + b.value, 0);
    return { series, total };
  }

  /** Record ids older than anything NATS could deliver again (DAM_INTERNAL keeps 7 days). */
  async pruneRecords(days = 8): Promise<number> {
    const r = await this.pool.query('DELETE FROM usage_records WHERE received_at < now() - make_interval(days => $1)', [days]);
    return r.rowCount ?? 0;
  }
}
