import type { z } from 'zod';
import { assetDataSchema } from './asset-data.schema';
import { deletionPayloadSchema } from './deletion-payload.schema';
import { assetEventEnvelope, type AssetEventDefinition } from './asset-event-envelope.schema';

const schema = assetEventEnvelope('file-deleted', deletionPayloadSchema).extend({
  /**
   * A Delete of keys that leaves the asset live (conversions or addon results removed, not the original): the asset
   * data as it now is, so a read model drops what went (the spec's deletion payload says only which keys were asked).
   */
  asset: assetDataSchema.optional(),
});

export const FILE_DELETED: AssetEventDefinition<'file-deleted', typeof schema> = { type: 'file-deleted', version: 1, schema };
export type FileDeletedEvent = z.infer<typeof schema>;
