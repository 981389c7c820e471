/**
 * The `custom_metadata` of one upload (the Upload Asset field, sent in tus `Upload-Metadata`): `{data, mode,
 * data_schema_id?}` built from what the picker's user typed for the file (title, description, free JSON) over the
 * data the embedding page gave every file. Pure: unit-tested.
 */
export interface FileMetaInput {
  title?: unknown;
  description?: unknown;
  /** A JSON object typed in the file's "More data (JSON)" field. */
  data?: unknown;
}

export type CustomMetadataResult = { ok: true; value: string | undefined } | { ok: false; error: string };

const text = (v: unknown): string => (typeof v === 'string' ? v.trim() : '');

export function customMetadataFor(meta: FileMetaInput, common: Record<string, unknown> = {}, dataSchemaId?: number): CustomMetadataResult {
  const data: Record<string, unknown> = { ...common };
  const extra = text(meta.data);
  if (extra) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(extra);
    } catch {
      return { ok: false, error: 'More data is not valid JSON' };
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
      return { ok: false, error: 'More data must be a JSON object, like {"rating": 4}' };
    Object.assign(data, parsed);
  }
  if (text(meta.title)) data.title = text(meta.title);
  if (text(meta.description)) data.description = text(meta.description);
  if (Object.keys(data).length === 0 && dataSchemaId === undefined) return { ok: true, value: undefined };
  return { ok: true, value: JSON.stringify({ data, mode: 'APPEND', ...(dataSchemaId === undefined ? {} : { data_schema_id: dataSchemaId }) }) };
}
