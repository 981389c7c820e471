import { unavailable } from '@dam/errors';
import { assetSourceResponse, INTERNAL_PATHS, internalClient, type InternalClientOptions } from '@dam/internal-api';
import type { WatermarkSource } from '../use-cases/transcode-asset.use-case';

/**
 * Where the group's watermark image is, from metadata (`GET /internal/v1/groups/:gid/assets/:id/source`):
 * undefined when the asset is gone (404), UNAVAILABLE (a retry) when metadata cannot answer.
 */
export function metadataWatermarkSource(options: { metadataUrl: string; signer: InternalClientOptions['signer'] }): WatermarkSource {
  const metadata = internalClient({ baseUrl: options.metadataUrl, audience: 'metadata', signer: options.signer });
  return async (groupId, assetId) => {
    const res = await metadata.call({ method: 'GET', path: INTERNAL_PATHS.assetSource(groupId, assetId), response: assetSourceResponse });
    if (res.ok) return res.body;
    if (res.status === 404) return undefined;
    throw unavailable(`metadata answered ${res.status} for the watermark asset ${assetId}`, 'METADATA_UNAVAILABLE');
  };
}
