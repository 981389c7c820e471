import { PERMISSION, requireAny, type Principal } from '@dam/auth-tokens';
import { notFound, validationFailed } from '@dam/errors';
import { USAGE_METRICS, type UsageMetric } from '@dam/events';
import type { UsagePeriod, UsageSeries, UsageStore } from '../domain/ports';

const DAY_MS = 86_400_000;
/** The longest range one query covers (CONTRACT §9). */
export const MAX_USAGE_RANGE_DAYS = 364;

export const metricNotFound = (metric: string) => notFound('METRIC_NOT_FOUND', `No metric ${metric}: one of ${USAGE_METRICS.join(', ')}`);

export interface UsageQuery {
  metric: string;
  from?: string;
  to?: string;
  period: UsagePeriod;
  userId?: number;
}

/**
 * Usage statistics (CONTRACT §9, VIEW_USAGE): one metric's series over `from`..`to` (default the last 24 hours)
 * in buckets of `period`, for the group or one user; at most MAX_USAGE_RANGE_DAYS.
 */
export async function usageSeries(
  usage: UsageStore,
  p: Principal,
  q: UsageQuery,
  now: () => number = Date.now,
): Promise<UsageSeries & { metric: UsageMetric; from: string; to: string; period: UsagePeriod }> {
  requireAny(p, [PERMISSION.VIEW_USAGE]);
  if (!(USAGE_METRICS as readonly string[]).includes(q.metric)) throw metricNotFound(q.metric);
  const to = q.to ? new Date(q.to) : new Date(now());
  const from = q.from ? new Date(q.from) : new Date(to.getTime() - DAY_MS);
  if (from.getTime() >= to.getTime()) throw validationFailed([{ path: 'from', message: 'must be before to' }]);
  if (to.getTime() - from.getTime() > MAX_USAGE_RANGE_DAYS * DAY_MS)
    throw validationFailed([{ path: 'to', message: `the range is at most ${MAX_USAGE_RANGE_DAYS} days` }]);
  const metric = q.metric as UsageMetric;
  const { series, total } = await usage.series({ groupId: p.group_id, metric, from, to, period: q.period, ...(q.userId ? { userId: q.userId } : {}) });
  return { metric, from: from.toISOString(), to: to.toISOString(), period: q.period, series, total };
}
