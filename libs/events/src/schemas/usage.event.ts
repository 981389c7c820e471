import { z } from 'zod';
import { SUBJECT_CDN_EVICT, usageSubject } from '../subjects';

/**
 * The usage metrics (CONTRACT §9) and who counts them: `api_requests` the gateway (authenticated requests),
 * `cdn_bytes` the edge (bytes served), `transcode_seconds` transcode (seconds of source video transcoded),
 * `addon_runs` the addon service, `storage_bytes` metadata (a daily gauge of originals and conversions: each record
 * is the total at its time, not an amount to add).
 */
export const USAGE_METRICS = ['api_requests', 'cdn_bytes', 'transcode_seconds', 'addon_runs', 'storage_bytes'] as const;
export type UsageMetric = (typeof USAGE_METRICS)[number];
export const GAUGE_METRICS: ReadonlySet<UsageMetric> = new Set(['storage_bytes']);

/**
 * Usage seen by one service over one interval, per group and user, for the usage owner (auth) to add up.
 * `id` is the Nats-Msg-Id and auth's key: a record published or delivered twice is counted once.
 */
export const usageRecordSchema = z.object({
  id: z.string().min(1),
  metric: z.enum(USAGE_METRICS),
  group_id: z.string().min(1),
  /** The user the usage counts against (cdn_bytes: the one whose accessID signed the link; storage: the creator). */
  user_id: z.number().int().positive(),
  value: z.number().nonnegative(),
  /** The interval counted, ISO 8601. */
  start: z.string(),
  end: z.string(),
});
export type UsageRecord = z.infer<typeof usageRecordSchema>;

/**
 * Where one metric's records are published: `dam.internal.usage.<metric>`, by the metric's counting service alone (its
 * NATS identity may publish no other usage subject); a record whose `metric` is not its subject's is dropped.
 */
export const usageOf = (metric: UsageMetric) => ({ subject: usageSubject(metric), schema: usageRecordSchema }) as const;

/** Cached objects every edge replica drops: all of some assets, and single objects or folders (ending in `/`). */
export const cdnEvictSchema = z.object({
  id: z.string().min(1),
  group_id: z.string().min(1),
  asset_ids: z.array(z.string().min(1)).max(100),
  object_keys: z.array(z.string().min(1)).max(100),
});
export type CdnEvict = z.infer<typeof cdnEvictSchema>;
export const CDN_EVICT = { subject: SUBJECT_CDN_EVICT, schema: cdnEvictSchema } as const;
