import { z } from 'zod';
import {
  ASSET_EVENTS,
  ASSET_EVENTS_SUBJECTS,
  ASSET_PURGES,
  ASSET_PURGES_SUBJECTS,
  assetDataSchema,
  assetEventTypeOf,
  assetPurgeSchema,
  COLLECTIONS,
  COLLECTIONS_SUBJECTS,
  collectionMembershipSchema,
  collectionStateSchema,
  DATA_SCHEMAS,
  DATA_SCHEMAS_SUBJECTS,
  dataSchemaSavedSchema,
  type AssetPurge,
  type DataSchemaSaved,
} from '@dam/events';
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

/** One stream the read model follows: what a message must be, and how it is applied (true: it changed the model). */
export interface ReadModelFeed<S extends z.ZodType = z.ZodType> {
  stream: string;
  subjects: string;
  schema: S;
  apply: (model: ReadModel, body: z.infer<S>, subject: string) => Promise<boolean>;
}

const feed = <S extends z.ZodType>(f: ReadModelFeed<S>): ReadModelFeed => f as unknown as ReadModelFeed;

/** The four streams of the read model, for the service's durable consumers and for a rebuild (replay-index). */
export const READ_MODEL_FEEDS = {
  // Any asset event of any group; a subject that is no asset event type is skipped.
  events: feed({
    stream: ASSET_EVENTS,
    subjects: ASSET_EVENTS_SUBJECTS,
    schema: assetEventEnvelope,
    apply: async (model, e, subject) => Boolean(assetEventTypeOf(subject)) && (await applyAssetEvent(model, e)),
  }),
  // Schemas as metadata saves them: their searchable paths, and the assets of each indexed again when one changes.
  schemas: feed({ stream: DATA_SCHEMAS, subjects: DATA_SCHEMAS_SUBJECTS, schema: dataSchemaSavedSchema, apply: applySchemaSaved }),
  // Collections as metadata changes them, in stream order.
  collections: feed({
    stream: COLLECTIONS,
    subjects: COLLECTIONS_SUBJECTS,
    schema: z.unknown(),
    apply: (model, body, subject) => applyCollectionMessage(model, subject, body),
  }),
  // Assets purged from the trash: gone from every search, the trash's included.
  purges: feed({
    stream: ASSET_PURGES,
    subjects: ASSET_PURGES_SUBJECTS,
    schema: assetPurgeSchema,
    apply: async (model, p) => (await applyPurge(model, p)) > 0,
  }),
};
export type ReadModelFeedName = keyof typeof READ_MODEL_FEEDS;
