import type { Principal, ServiceSigner } from '@dam/auth-tokens';
import { unavailable } from '@dam/errors';

/** Which of these asset ids exist in the principal's group (metadata decides; auth holds no assets). */
export interface AssetDirectory {
  existing(principal: Principal, ids: string[]): Promise<string[]>;
}

/** metadata `POST /internal/v1/assets/exists`, as auth, for the user changing settings. */
export function httpAssetDirectory(opts: { baseUrl: string; signer: ServiceSigner; timeoutMs?: number }): AssetDirectory {
  const base = opts.baseUrl.replace(/\/$/, '');
  const path = '/internal/v1/assets/exists';
  return {
    async existing(principal, ids) {
      const res = await fetch(`${base}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...opts.signer.headers({ audience: 'metadata', method: 'POST', path, principal }) },
        body: JSON.stringify({ ids }),
        signal: AbortSignal.timeout(opts.timeoutMs ?? 5000),
      }).catch(() => {
        throw unavailable('The metadata service is unavailable', 'METADATA_UNAVAILABLE');
      });
      if (res.status !== 200) {
        await res.body?.cancel().catch(() => undefined);
        throw unavailable(`The metadata service answered ${res.status}`, 'METADATA_UNAVAILABLE');
      }
      return ((await res.json()) as { existing: string[] }).existing;
    },
  };
}
