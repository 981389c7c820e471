import type { Principal, ServiceSigner } from '@dam/auth-tokens';
import { unavailable } from '@dam/errors';
import { assetsExistResponse, internalClient, INTERNAL_PATHS } from '@dam/internal-api';

/** Which of these asset ids exist in the principal's group (metadata decides; auth holds no assets). */
export interface AssetDirectory {
  existing(principal: Principal, ids: string[]): Promise<string[]>;
}

/** metadata `POST /internal/v1/assets/exists`, as auth, for the user changing settings. */
export function httpAssetDirectory(opts: { baseUrl: string; signer: ServiceSigner; timeoutMs?: number }): AssetDirectory {
  const metadata = internalClient({ baseUrl: opts.baseUrl, audience: 'metadata', signer: opts.signer, timeoutMs: opts.timeoutMs ?? 5000 });
  return {
    async existing(principal, ids) {
      const res = await metadata.call({ method: 'POST', path: INTERNAL_PATHS.assetsExist, principal, body: { ids }, response: assetsExistResponse });
      if (!res.ok) throw unavailable(`The metadata service answered ${res.status}`, 'METADATA_UNAVAILABLE');
      return res.body.existing;
    },
  };
}
