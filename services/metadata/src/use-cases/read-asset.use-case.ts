import type { AssetData } from '@dam/events';
import type { Principal } from '@dam/auth-tokens';
import { canRead } from '../domain/asset-access';
import { assetInTrash, assetNotFound, conversionNotFound } from '../domain/asset.errors';
import { toAssetData, type Asset } from '../domain/asset';
import type { AssetReader } from '../domain/ports';

/** Loads an asset the caller may read, or throws the same 404 whether it is missing, foreign or not visible. */
export async function findReadableAsset(reader: Pick<AssetReader, 'findById'>, caller: Principal, id: string): Promise<Asset> {
  const asset = await reader.findById(caller.group_id, id);
  if (!asset || !canRead(caller, asset)) throw assetNotFound();
  if (asset.deletedAt) throw assetInTrash();
  return asset;
}

export async function getAssetData(reader: AssetReader, caller: Principal, id: string): Promise<AssetData> {
  return toAssetData(await findReadableAsset(reader, caller, id));
}

/** What a download needs to know about the stored bytes of one key. */
export interface DownloadTarget {
  /** The asset's group and id, and its original's checksum (on-demand transforms are cached under it). */
  groupId: number;
  assetId: string;
  assetChecksum: string;
  objectKey: string;
  contentType: string;
  fileName: string;
  /** Known for originals (the MD5 and size are on the record); conversions are stat'ed from storage. */
  size?: number;
  etag?: string;
}

export async function resolveDownload(reader: Pick<AssetReader, 'findById'>, caller: Principal, id: string, key: string): Promise<DownloadTarget> {
  const asset = await findReadableAsset(reader, caller, id);
  if (key === 'original') {
    return {
      groupId: asset.groupId,
      assetId: asset.id,
      assetChecksum: asset.checksum,
      objectKey: asset.objectKey,
      contentType: asset.contentType,
      fileName: asset.name,
      size: asset.size,
      etag: asset.checksum,
    };
  }
  const conversion = Object.hasOwn(asset.conversions, key) ? asset.conversions[key] : undefined;
  if (!conversion) throw conversionNotFound(key);
  const ext = conversion.object_key.includes('.') ? conversion.object_key.slice(conversion.object_key.lastIndexOf('.')) : '';
  return {
    groupId: asset.groupId,
    assetId: asset.id,
    assetChecksum: asset.checksum,
    objectKey: conversion.object_key,
    contentType: conversion.content_type,
    fileName: `${baseName(asset.name)}_${key}${ext}`,
  };
}

function baseName(name: string): string {
  const dot = name.lastIndexOf('.');
  return dot > 0 ? name.slice(0, dot) : name;
}
