import { z } from 'zod';

/**
 * An asset schema's searchable parts as saved (CONTRACT §5), published by metadata on `dam.schemas.<group>.<id>`
 * when a schema is created or updated. The stream keeps each schema's last message: a reader that starts
 * from the beginning learns every schema as it is now.
 */
export const dataSchemaSavedSchema = z.object({
  id: z.string().min(1),
  group_id: z.number().int(),
  schema_id: z.number().int().positive(),
  /** `{<property path>: {searchable, keyword, ui}}`: the paths whose values a keyword search matches. */
  service_properties: z.record(z.string(), z.looseObject({ searchable: z.boolean().optional(), keyword: z.boolean().optional() })),
  updated_at: z.iso.datetime({ offset: true }),
});
export type DataSchemaSaved = z.infer<typeof dataSchemaSavedSchema>;
