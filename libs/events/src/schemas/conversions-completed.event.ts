import { z } from 'zod';
import { SUBJECT_CONVERSIONS_COMPLETED } from '../subjects';

const dimension = z.number().int().nonnegative().nullable();

/** One output written by the conversion service (the object is already in storage when this is sent). */
export const completedConversionSchema = z.object({
  object_key: z.string().min(1),
  content_type: z.string().min(1),
  width: dimension,
  height: dimension,
  size: z.number().int().nonnegative(),
});

/**
 * conversion → metadata: the outputs made for one original (identified by its checksum, so metadata can drop a
 * report about an original that has since been replaced) and the keys that failed.
 */
export const conversionsCompletedSchema = z.object({
  id: z.string().min(1),
  asset_id: z.string().min(1),
  group_id: z.string().min(1),
  source_checksum: z.string().min(1),
  image: z.object({ width: z.number().int().nonnegative(), height: z.number().int().nonnegative() }).nullable(),
  conversions: z.record(z.string(), completedConversionSchema),
  errors: z.record(z.string(), z.string()),
});

export const CONVERSIONS_COMPLETED = {
  subject: SUBJECT_CONVERSIONS_COMPLETED,
  version: 1,
  schema: conversionsCompletedSchema,
} as const;

export type ConversionsCompleted = z.infer<typeof conversionsCompletedSchema>;
export type CompletedConversion = z.infer<typeof completedConversionSchema>;
