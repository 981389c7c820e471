import type { ServiceSigner } from '@dam/auth-tokens';
import type { AssetDirectory } from '../domain/ports';
import { unavailable } from '@dam/errors';
import { assetsExistResponse, internalClient, INTERNAL_PATHS } from '@dam/internal-api';

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
