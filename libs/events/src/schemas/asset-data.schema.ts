import { z } from 'zod';

/** The spec's "Asset data format": Get Data's body and the payload of file-saved/processed/data-updated/addon. */
export const ASSET_STATUSES = ['OK', 'NOT_READY', 'ERROR', 'ARCHIVED'] as const;
export const assetStatusSchema = z.enum(ASSET_STATUSES);
export type AssetStatus = z.infer<typeof assetStatusSchema>;

const isoTime = z.iso.datetime({ offset: true });
const count = z.number().int().nonnegative();

/** Core metadata: for images at least width and height; other extracted fields pass through. */
export const coreMetadataSchema = z.looseObject({
  width: count.optional(),
  height: count.optional(),
});

/** Width and height are null where they mean nothing (audio renditions, documents, cue files). */
export const conversionEntrySchema = z.object({
  width: count.nullable(),
  height: count.nullable(),
  size: count,
  public: z.boolean(),
});

export const addonInfoSchema = z.looseObject({ available: z.boolean() });

export const assetUrlsSchema = z.looseObject({
  public: z.record(z.string(), z.string()).optional(),
});

export const assetDataSchema = z.object({
  id: z.string().min(1).max(64),
  status: assetStatusSchema,
  name: z.string(),
  size: count,
  checksum: z.string(),
  content_type: z.string().min(1),
  creator_id: z.number().int(),
  upload_time: isoTime,
  update_time: isoTime,
  metadata: coreMetadataSchema,
  data: z.record(z.string(), z.unknown()),
  conversions: z.record(z.string(), conversionEntrySchema),
  addons_info: z.record(z.string(), addonInfoSchema),
  errors: z.record(z.string(), z.string()).optional(),
  urls: assetUrlsSchema.optional(),
});

export type AssetData = z.infer<typeof assetDataSchema>;
export type ConversionEntry = z.infer<typeof conversionEntrySchema>;
