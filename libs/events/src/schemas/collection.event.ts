import { z } from 'zod';

/**
 * The collections an asset is in, all of them, after a change (published by metadata through its outbox on
 * `dam.collections.<group>.asset.<asset_id>`). `version` grows with every change of the asset's memberships: a
 * reader keeps the highest it applied.
 */
export const collectionMembershipSchema = z.object({
  id: z.string().min(1),
  group_id: z.number().int(),
  asset_id: z.string().min(1),
  collection_ids: z.array(z.string().min(1)).max(10_000),
  version: z.number().int().positive(),
});
export type CollectionMembership = z.infer<typeof collectionMembershipSchema>;

/** Who sees a collection (`dam.collections.<group>.collection.<id>`): its owner, whether it is shared, or gone. */
export const collectionStateSchema = z.object({
  id: z.string().min(1),
  group_id: z.number().int(),
  collection_id: z.string().min(1),
  owner_id: z.number().int(),
  shared: z.boolean(),
  deleted: z.boolean(),
});
export type CollectionState = z.infer<typeof collectionStateSchema>;
