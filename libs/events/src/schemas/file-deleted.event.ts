import type { z } from 'zod';
import { deletionPayloadSchema } from './deletion-payload.schema';
import { assetEventEnvelope, type AssetEventDefinition } from './asset-event-envelope.schema';

const schema = assetEventEnvelope('file-deleted', deletionPayloadSchema);

export const FILE_DELETED: AssetEventDefinition<'file-deleted', typeof schema> = { type: 'file-deleted', version: 1, schema };
export type FileDeletedEvent = z.infer<typeof schema>;
