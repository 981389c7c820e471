import { z } from 'zod';
import type { AssetEventType } from '../subjects';
import { ADDON_PROCESSED } from './addon-processed.event';
import { FILE_DATA_UPDATED } from './file-data-updated.event';
import { FILE_DELETED } from './file-deleted.event';
import { FILE_PROCESSED } from './file-processed.event';
import { FILE_SAVED } from './file-saved.event';
import { FILE_UNDELETED } from './file-undeleted.event';

/** Envelope schema per public event name. */
export const ASSET_EVENT_SCHEMAS = {
  'file-saved': FILE_SAVED.schema,
  'file-processed': FILE_PROCESSED.schema,
  'file-data-updated': FILE_DATA_UPDATED.schema,
  'file-deleted': FILE_DELETED.schema,
  'file-undeleted': FILE_UNDELETED.schema,
  'addon-processed': ADDON_PROCESSED.schema,
} as const satisfies Record<AssetEventType, z.ZodType>;

/** Any message of ASSET_EVENTS (for subscribers to `assets.events.>`), discriminated by `type`. */
export const assetEventSchema = z.discriminatedUnion('type', [
  FILE_SAVED.schema,
  FILE_PROCESSED.schema,
  FILE_DATA_UPDATED.schema,
  FILE_DELETED.schema,
  FILE_UNDELETED.schema,
  ADDON_PROCESSED.schema,
]);

export type AssetEvent = z.infer<typeof assetEventSchema>;
