import type { z } from 'zod';
import { assetDataSchema } from './asset-data.schema';
import { assetEventEnvelope, type AssetEventDefinition } from './asset-event-envelope.schema';

const schema = assetEventEnvelope('file-data-updated', assetDataSchema);

export const FILE_DATA_UPDATED: AssetEventDefinition<'file-data-updated', typeof schema> = { type: 'file-data-updated', version: 1, schema };
export type FileDataUpdatedEvent = z.infer<typeof schema>;
