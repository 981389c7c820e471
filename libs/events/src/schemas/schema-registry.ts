import type { z } from 'zod';
import { assetEventTypeOf, SUBJECT_CONVERSIONS_COMPLETED } from '../subjects';
import { ASSET_EVENT_SCHEMAS } from './asset-event.schema';
import { conversionsCompletedSchema } from './conversions-completed.event';

const INTERNAL_SCHEMAS: Record<string, z.ZodType> = {
  [SUBJECT_CONVERSIONS_COMPLETED]: conversionsCompletedSchema,
};

/** The schema that every message on `subject` must satisfy, or undefined for a subject nobody defined. */
export function schemaForSubject(subject: string): z.ZodType | undefined {
  const type = assetEventTypeOf(subject);
  if (type) return ASSET_EVENT_SCHEMAS[type];
  return INTERNAL_SCHEMAS[subject];
}
