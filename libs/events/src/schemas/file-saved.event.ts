import type { z } from 'zod';
import { assetDataSchema } from './asset-data.schema';
import { assetEventEnvelope, type AssetEventDefinition } from './asset-event-envelope.schema';

const schema = assetEventEnvelope('file-saved', assetDataSchema);

export const FILE_SAVED: AssetEventDefinition<'file-saved', typeof schema> = { type: 'file-saved', version: 1, schema };
export type FileSavedEvent = z.infer<typeof schema>;
