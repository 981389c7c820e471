import { z } from 'zod';
import { payloadTooLarge, validationFailed, type ErrorDetail } from '@dam/errors';
import { defaultSchema, validateAgainst } from './asset-schema';
import type { Tx } from './ports';

/** Serialized `data` over this many characters is refused (spec limit, CONTRACT §11: JSON.stringify length). */
export const MAX_DATA_CHARS = 2000;

export const customMetadataSchema = z.object({
  data: z.record(z.string(), z.unknown()),
  mode: z.enum(['APPEND', 'REPLACE']).default('APPEND'),
  data_schema_id: z.number().int().nonnegative().optional(),
});

export type CustomMetadata = z.output<typeof customMetadataSchema>;

/**
 * Checks custom metadata as Update Data and Upload share it: shape, reserved keys, size of what was sent. The
 * schema and the size of the resulting data are checked against the asset (`resolveData`). `prefix` names the
 * member in error details (`custom_metadata` on upload; none for Update Data, whose body it is).
 */
export function validateCustomMetadata(input: unknown, prefix: string): CustomMetadata {
  const result = customMetadataSchema.safeParse(input);
  const at = (...parts: string[]) => [prefix, ...parts].filter(Boolean).join('.');
  if (!result.success) {
    throw validationFailed(result.error.issues.map((i) => ({ path: at(...i.path.map(String)), message: i.message })));
  }
  const value = result.data;
  const details: ErrorDetail[] = Object.keys(value.data)
    .filter((key) => key.startsWith('_service'))
    .map((key) => ({ path: at('data', key), message: 'keys starting with _service are reserved' }));
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

/**
 * The custom data an asset ends up with after `change`, checked as a whole: its schema exists (schema 0 is
 * built in), the result is at most 2000 characters (413), and it matches the schema (400, every problem).
 */
export async function resolveData(
  tx: Pick<Tx, 'schemas'>,
  groupId: number,
  current: { data: Record<string, unknown>; dataSchemaId: number },
  change: CustomMetadata,
  prefix = '',
): Promise<{ data: Record<string, unknown>; dataSchemaId: number }> {
  const at = (...parts: string[]) => [prefix, ...parts].filter(Boolean).join('.');
  const dataSchemaId = change.data_schema_id ?? current.dataSchemaId;
  const schema = dataSchemaId === 0 ? defaultSchema(groupId) : await tx.schemas.find(groupId, dataSchemaId);
  if (!schema) throw validationFailed([{ path: at('data_schema_id'), message: `schema ${dataSchemaId} does not exist` }]);
  const data = applyCustomMetadata(current.data, change);
  if (JSON.stringify(data).length > MAX_DATA_CHARS) {
    throw payloadTooLarge(`custom data would be over ${MAX_DATA_CHARS} characters`, 'DATA_TOO_LARGE');
  }
  validateAgainst(schema, data, at('data'));
  return { data, dataSchemaId };
}
