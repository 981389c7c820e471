import type { AssetData, AssetStatus } from '@dam/events';

/** One stored output of an asset; `object_key`/`content_type` stay internal, the rest is public. */
export interface StoredConversion {
  width: number | null;
  height: number | null;
  size: number;
  public: boolean;
  object_key: string;
  content_type: string;
  etag?: string;
}

/** The asset record as the repository returns it (domain shape, not the row). */
export interface Asset {
  id: string;
  groupId: number;
  creatorId: number;
  name: string;
  size: number;
  checksum: string;
  contentType: string;
  status: AssetStatus;
  metadata: Record<string, unknown>;
  data: Record<string, unknown>;
  dataSchemaId: number;
  conversions: Record<string, StoredConversion>;
  addonsInfo: Record<string, { available: boolean }>;
  /** What each addon found (CONTRACT §6 shapes), for `GET .../addons/{addon}`. */
  addonResults: Record<string, Record<string, unknown>>;
  errors: Record<string, string> | null;
  objectKey: string;
  uploadTime: Date;
  updateTime: Date;
  deletedAt: Date | null;
  /** Bumped by every change of the row; asset events carry it (last-writer-wins for read models). */
  version: number;
  /** Anonymous URLs of the keys made public (Set Public Access). */
  publicUrls: Record<string, string>;
}

/** What creating an asset needs: the record before any processing. */
export type NewAsset = Pick<
  Asset,
  'id' | 'groupId' | 'creatorId' | 'name' | 'size' | 'checksum' | 'contentType' | 'status' | 'metadata' | 'data' | 'dataSchemaId' | 'objectKey'
>;

export const isImage = (contentType: string): boolean => contentType.toLowerCase().startsWith('image/');
export const isVideo = (contentType: string): boolean => contentType.toLowerCase().startsWith('video/');

/**
 * Multi-file conversions are recorded by their descriptor (`image.dzi`, `master.m3u8`) inside their own folder;
 * a storyboard by its sprite sheet, with its WebVTT file next to it.
 */
const MULTI_FILE_DESCRIPTOR = /\/(image\.dzi|master\.m3u8|storyboard\/sprite\.jpg)$/;

/** What the object store holds for a conversion: its object, or (multi-file) the folder of its files. */
export function storedObjectsOf(c: Pick<StoredConversion, 'object_key'>): string {
  return MULTI_FILE_DESCRIPTOR.test(c.object_key) ? c.object_key.slice(0, c.object_key.lastIndexOf('/') + 1) : c.object_key;
}

/** The spec's asset data format: what Get Data answers and what asset events carry. */
export function toAssetData(asset: Asset): AssetData {
  const conversions: AssetData['conversions'] = {};
  for (const [key, c] of Object.entries(asset.conversions)) {
    conversions[key] = { width: c.width, height: c.height, size: c.size, public: Object.hasOwn(asset.publicUrls, key) };
  }
  const out: AssetData = {
    id: asset.id,
    status: asset.status,
    name: asset.name,
    size: asset.size,
    checksum: asset.checksum,
    content_type: asset.contentType,
    creator_id: asset.creatorId,
    upload_time: asset.uploadTime.toISOString(),
    update_time: asset.updateTime.toISOString(),
    metadata: asset.metadata,
    data: asset.data,
    conversions,
    addons_info: asset.addonsInfo,
    urls: { public: { ...asset.publicUrls } },
  };
  if (asset.status === 'ERROR') out.errors = asset.errors ?? {};
  return out;
}

/**
 * What the asset's addons found, as search indexes it: object labels (auto_tagging's labels and best guesses) and
 * the words of its text (text_extraction), each list distinct and at most 500.
 */
export function addonTermsOf(asset: Pick<Asset, 'addonResults'>): { labels: string[]; words: string[] } | undefined {
  const r = asset.addonResults;
  if (Object.keys(r).length === 0) return undefined;
  const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);
  const tagging = (r.auto_tagging ?? {}) as { labels?: unknown; best_guess?: unknown };
  const labelNames = Array.isArray(tagging.labels)
    ? tagging.labels.map((l) => (l as { label?: unknown }).label).filter((x): x is string => typeof x === 'string')
    : [];
  const labels = [...new Set([...labelNames, ...strings(tagging.best_guess)])].slice(0, 500);
  const words = [...new Set(strings((r.text_extraction as { words?: unknown } | undefined)?.words))].slice(0, 500);
  return { labels, words };
}
