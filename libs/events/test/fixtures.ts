import type { AssetData } from '../src';

export function assetData(overrides: Partial<AssetData> = {}): AssetData {
  return {
    id: 'a'.repeat(32),
    status: 'NOT_READY',
    name: 'photo.jpg',
    size: 1234,
    checksum: 'd41d8cd98f00b204e9800998ecf8427e',
    content_type: 'image/jpeg',
    creator_id: 7,
    upload_time: '2025-01-02T03:04:05.000Z',
    update_time: '2025-01-02T03:04:05.000Z',
    metadata: { width: 640, height: 480 },
    data: { title: 'hello' },
    conversions: {},
    addons_info: { ON_DEMAND_IMAGE: { available: false } },
    ...overrides,
  };
}

export function fileSavedEvent(id = 'evt-1', groupId = 'g1') {
  return {
    id,
    type: 'file-saved' as const,
    time: '2025-01-02T03:04:05.000Z',
    group_id: groupId,
    asset_id: 'a'.repeat(32),
    version: 1,
    data: assetData(),
  };
}
