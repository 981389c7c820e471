import type { AssetData } from '@dam/events';

/** An asset as file-saved carries it (group 1's admin, a small text file). */
export const assetData = (id: string, name: string): AssetData => ({
  id,
  status: 'OK',
  name,
  size: 10,
  checksum: '0'.repeat(32),
  content_type: 'text/plain',
  creator_id: 1,
  upload_time: '2026-11-23T10:00:00.000Z',
  update_time: '2026-11-23T10:00:00.000Z',
  metadata: {},
  data: {},
  conversions: {},
  addons_info: {},
});
