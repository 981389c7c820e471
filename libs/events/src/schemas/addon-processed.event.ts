import type { z } from 'zod';
import { assetDataSchema } from './asset-data.schema';
import { assetEventEnvelope, type AssetEventDefinition } from './asset-event-envelope.schema';

const schema = assetEventEnvelope('addon-processed', assetDataSchema);

export const ADDON_PROCESSED: AssetEventDefinition<'addon-processed', typeof schema> = { type: 'addon-processed', version: 1, schema };
export type AddonProcessedEvent = z.infer<typeof schema>;
