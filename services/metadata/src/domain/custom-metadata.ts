import { z } from 'zod';
import { payloadTooLarge, validationFailed, type ErrorDetail } from '@dam/errors';

/** Serialized `data` over this many characters is refused (spec limit, CONTRACT §11: JSON.stringify length). */
export const MAX_DATA_CHARS = 2000;
/** Only the built-in default schema exists until schemas are implemented. */
const KNOWN_SCHEMA_IDS = new Set([0]);

export const customMetadataSchema = z.object({
  data: z.record(z.string(), z.unknown()),
  mode: z.enum(['APPEND', 'REPLACE']).default('APPEND'),
  data_schema_id: z.number().int().nonnegative().optional(),
});

export type CustomMetadata = z.output<typeof customMetadataSchema>;

/**
 * Checks custom metadata as Update Data and Upload share it: shape, reserved keys, known schema, size.
 * `prefix` names the member in error details (`custom_metadata` on upload).
 */
export function validateCustomMetadata(input: unknown, prefix: string): CustomMetadata {
  const result = customMetadataSchema.safeParse(input);
  if (!result.success) {
    throw validationFailed(
      result.error.issues.map((i) => ({ path: [prefix, ...i.path.map(String)].join('.'), message: i.message })),
    );
  }
  const value = result.data;
  const details: ErrorDetail[] = Object.keys(value.data)
    .filter((key) => key.startsWith('_service'))
    .map((key) => ({ path: `${prefix}.data.${key}`, message: 'keys starting with _service are reserved' }));
  if (value.data_schema_id !== undefined && !KNOWN_SCHEMA_IDS.has(value.data_schema_id)) {
    details.push({ path: `${prefix}.data_schema_id`, message: `schema ${value.data_schema_id} does not exist` });
  }
  if (details.length > 0) throw validationFailed(details);
  if (JSON.stringify(value.data).length > MAX_DATA_CHARS) {
    throw payloadTooLarge(`custom metadata is over ${MAX_DATA_CHARS} characters`, 'DATA_TOO_LARGE');
  }
  return value;
}

/** APPEND keeps fields that are not sent; REPLACE overwrites all custom data. */
export function applyCustomMetadata(current: Record<string, unknown>, change: CustomMetadata): Record<string, unknown> {
  return change.mode === 'REPLACE' ? { ...change.data } : { ...current, ...change.data };
}
