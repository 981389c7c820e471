import { z } from 'zod';
import { assetDataSchema, collectionMembershipSchema, collectionStateSchema, type AssetPurge, type DataSchemaSaved } from '@dam/events';
import type { ReadModel } from '../domain/ports';

/**
 * How each message of the four streams the read model follows changes it. Every apply is idempotent (the
 * repository compares versions), so redeliveries and replays are harmless; each answers whether it changed a row.
 */

/** Any asset event: the envelope checked here, the payload by its type below. */
export const assetEventEnvelope = z.looseObject({
  id: z.string().min(1),
  type: z.string().min(1),
  group_id: z.string().regex(/^\d+$/),
  asset_id: z.string().min(1),
  version: z.number().int().positive(),
  data_schema_id: z.number().int().nonnegative().optional(),
  addon_terms: z.object({ labels: z.array(z.string()), words: z.array(z.string()) }).optional(),
  data: z.unknown(),
});
export type AssetEventEnvelope = z.infer<typeof assetEventEnvelope>;
const deletion = z.looseObject({ keys: z.array(z.string()).default([]) });
/** file-deleted of a Delete that left the asset live carries the asset as it now is (libs/events FILE_DELETED). */
const liveAfterDeletion = z.looseObject({ asset: assetDataSchema });

/** Applies one asset event (ASSET_EVENTS). */
export async function applyAssetEvent(model: ReadModel, e: AssetEventEnvelope): Promise<boolean> {
  const groupId = Number(e.group_id);
  switch (e.type) {
    case 'file-saved':
    case 'file-processed':
    case 'file-data-updated':
    case 'addon-processed': {
      const asset = assetDataSchema.safeParse(e.data);
      if (!asset.success || asset.data.id !== e.asset_id) return false;
      return model.upsertAsset(groupId, e.version, asset.data, e.data_schema_id, e.addon_terms);
    }
    case 'file-deleted': {
      // The original sends the asset to the trash; conversions or addon results deleted alone leave it where it is,
      // without what went (events from before this field carry no asset: nothing to apply).
      const keys = deletion.safeParse(e.data).data?.keys ?? [];
      if (keys.includes('original')) return model.setDeleted(groupId, e.asset_id, e.version, true);
      const live = liveAfterDeletion.safeParse(e);
      if (!live.success || live.data.asset.id !== e.asset_id) return false;
      return model.upsertAsset(groupId, e.version, live.data.asset, e.data_schema_id, e.addon_terms);
    }
    case 'file-undeleted':
      return model.setDeleted(groupId, e.asset_id, e.version, false);
    default:
      return false;
  }
}

/** Each purged asset leaves the model (a tombstone); answers how many rows changed. */
export async function applyPurge(model: ReadModel, p: AssetPurge): Promise<number> {
  let changed = 0;
  for (const a of p.assets) if (await model.setPurged(p.group_id, a.id, a.version)) changed += 1;
  return changed;
}

/** Applies one COLLECTIONS message by its subject: an asset's memberships, or a collection's state. */
export async function applyCollectionMessage(model: ReadModel, subject: string, body: unknown): Promise<boolean> {
  const kind = subject.split('.')[3];
  if (kind === 'asset') {
    const m = collectionMembershipSchema.safeParse(body);
    return m.success && model.setMemberships(m.data.group_id, m.data.asset_id, m.data.collection_ids, m.data.version);
  }
  if (kind === 'collection') {
    const c = collectionStateSchema.safeParse(body);
    if (!c.success) return false;
    await model.saveCollection(c.data);
    return true;
  }
  return false;
}

/** A schema as metadata saved it (DATA_SCHEMAS): its searchable paths, and its assets indexed again. */
export const applySchemaSaved = (model: ReadModel, s: DataSchemaSaved): Promise<boolean> =>
  model.saveSchema(s.group_id, s.schema_id, s.service_properties, s.updated_at);
