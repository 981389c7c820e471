import { z } from 'zod';

/** The spec's "Deletion payload", carried by file-deleted and file-undeleted. */
export const deletionPayloadSchema = z.object({
  id: z.string().min(1),
  event: z.enum(['file-deleted', 'file-undeleted']),
  keys: z.array(z.string()),
  status: z.enum(['OK', 'MAYBE', 'ERROR']),
  message: z.string(),
  errors: z.record(z.string(), z.string()).optional(),
});

export type DeletionPayload = z.infer<typeof deletionPayloadSchema>;
