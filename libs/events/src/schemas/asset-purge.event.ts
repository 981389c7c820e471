import { z } from 'zod';

/** Assets purged in one transaction, each with its last version (a read model's tombstone outranks its events). */
export const assetPurgeSchema = z.object({
  id: z.string().min(1),
  group_id: z.number().int(),
  assets: z
    .array(z.object({ id: z.string().min(1), version: z.number().int().positive() }))
    .min(1)
    .max(1000),
});
export type AssetPurge = z.infer<typeof assetPurgeSchema>;
