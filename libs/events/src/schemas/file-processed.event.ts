import type { z } from 'zod';
import { assetDataSchema } from './asset-data.schema';
import { assetEventEnvelope, type AssetEventDefinition } from './asset-event-envelope.schema';

const schema = assetEventEnvelope('file-processed', assetDataSchema);

export const FILE_PROCESSED: AssetEventDefinition<'file-processed', typeof schema> = { type: 'file-processed', version: 1, schema };
export type FileProcessedEvent = z.infer<typeof schema>;
