import { z } from 'zod';
import { SUBJECT_CDN_EVICT, SUBJECT_USAGE_CDN_BYTES } from '../subjects';

/**
 * Usage seen by one service over one interval, per group and user, for the usage owner to add up (CONTRACT §9).
 * `id` is the Nats-Msg-Id: a record published twice (a retry) is stored once.
 */
export const usageRecordSchema = z.object({
  id: z.string().min(1),
  metric: z.enum(['cdn_bytes']),
  group_id: z.string().min(1),
  /** The user the usage counts against (for cdn_bytes: the one whose accessID signed the link). */
  user_id: z.number().int().positive(),
  value: z.number().int().nonnegative(),
  /** The interval counted, ISO 8601. */
  start: z.string(),
  end: z.string(),
});
export type UsageRecord = z.infer<typeof usageRecordSchema>;

export const CDN_BYTES_USAGE = { subject: SUBJECT_USAGE_CDN_BYTES, schema: usageRecordSchema } as const;

/** Cached objects every edge replica drops: all of some assets, and single objects or folders (ending in `/`). */
export const cdnEvictSchema = z.object({
  id: z.string().min(1),
  group_id: z.string().min(1),
  asset_ids: z.array(z.string().min(1)).max(100),
  object_keys: z.array(z.string().min(1)).max(100),
});
export type CdnEvict = z.infer<typeof cdnEvictSchema>;
export const CDN_EVICT = { subject: SUBJECT_CDN_EVICT, schema: cdnEvictSchema } as const;
