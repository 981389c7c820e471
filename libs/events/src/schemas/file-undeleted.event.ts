import type { z } from 'zod';
import { deletionPayloadSchema } from './deletion-payload.schema';
import { assetEventEnvelope, type AssetEventDefinition } from './asset-event-envelope.schema';

const schema = assetEventEnvelope('file-undeleted', deletionPayloadSchema);

export const FILE_UNDELETED: AssetEventDefinition<'file-undeleted', typeof schema> = { type: 'file-undeleted', version: 1, schema };
export type FileUndeletedEvent = z.infer<typeof schema>;
