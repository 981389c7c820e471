import { z } from 'zod';
import type { AssetEventType } from '../subjects';

/**
 * Every message on ASSET_EVENTS: `{id, type, time, group_id, asset_id, version, data_schema_id?, addon_terms?, data}`
 * (CONTRACT §10 plus `version`, `data_schema_id` and `addon_terms`). `id` is unique per event and is also the `Nats-Msg-Id`, so subscribers dedupe on it. `version`
 * is the asset's version after the change the event describes: it grows with every change of the asset, so a
 * read model keeps, per asset, the highest version it applied and ignores anything older (last writer wins).
 */
export function assetEventEnvelope<T extends AssetEventType, D extends z.ZodType>(type: T, data: D) {
  return z.object({
    id: z.string().min(1).max(128),
    type: z.literal(type),
    time: z.iso.datetime({ offset: true }),
    group_id: z.string().min(1),
    asset_id: z.string().min(1),
    version: z.number().int().positive(),
    /** The asset's schema (CONTRACT §5) on events that carry the asset data; 0 is the default schema. */
    data_schema_id: z.number().int().nonnegative().optional(),
    /** What the asset's addons found, for search: object labels (the `tags` facet) and the words of its text. */
    addon_terms: z.object({ labels: z.array(z.string().max(200)).max(500), words: z.array(z.string().max(200)).max(500) }).optional(),
    data,
  });
}

/** What each event module exports: its name, its version and its envelope schema. */
export interface AssetEventDefinition<T extends AssetEventType, S extends z.ZodType> {
  readonly type: T;
  readonly version: number;
  readonly schema: S;
}
