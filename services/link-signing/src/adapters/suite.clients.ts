import { AppError, forbidden, unavailable } from '@dam/errors';
import type { SuiteClients } from '../domain/ports';
import { accessIdResponse, accessOwnerResponse, deliveryResponse, INTERNAL_PATHS, internalClient, type InternalClientOptions } from '@dam/internal-api';

export type { SuiteClients } from '../domain/ports';
/** Re-exported for consumers/cdn-jobs.consumer.ts (the coordinator's, not moved here). */
export { principalOfOwner } from '../domain/delivery';

/** How long metadata may take to answer a delivery call for `count` ids (no transform): 5 s, and 100 ms an id more. */
export const deliveryTimeoutMs = (count: number): number => 5_000 + 100 * count;

export function suiteClients(options: { authUrl: string; metadataUrl: string; signer: InternalClientOptions['signer'] }): SuiteClients {
  const auth = internalClient({ baseUrl: options.authUrl, audience: 'auth', signer: options.signer });
  const metadata = internalClient({ baseUrl: options.metadataUrl, audience: 'metadata', signer: options.signer });
  return {
    async accessIdOf(principal) {
      // For the caller: an API key's links carry the key's accessID, so revoking the key ends them.
      const res = await auth.call({ method: 'GET', path: INTERNAL_PATHS.accessIdOfCaller, principal, response: accessIdResponse });
      if (res.ok) return res.body.access_id;
      if (res.status === 404) throw forbidden('The user or API key no longer exists', 'ACCESS_REVOKED');
      throw unavailable(`auth answered ${res.status} for the user's accessID`, 'AUTH_UNAVAILABLE');
    },
    async accessOwner(accessId) {
      const res = await auth.call({ method: 'GET', path: INTERNAL_PATHS.accessOwner(accessId), response: accessOwnerResponse });
      if (res.ok) return res.body;
      if (res.status === 404 || res.status === 400) return undefined;
      throw unavailable(`auth answered ${res.status} for an accessID`, 'AUTH_UNAVAILABLE');
    },
    async delivery(principal, ids, key, transform) {
      const res = await metadata.call({
        method: 'POST',
        path: INTERNAL_PATHS.delivery,
        body: { ids, key, ...(transform ? { transform } : {}) },
        principal,
        response: deliveryResponse,
        // A transform not made yet is made during the call (metadata gives conversion up to 60 s). A bulk get_link's
        // call (up to 100 ids) gets more time than one id's 5 s (issue 35: 20 ids under load passed 5 s and get_link
        // answered 503): 100 ids, 15 s, within the gateway's 60 s for the request.
        timeoutMs: transform ? 65_000 : deliveryTimeoutMs(ids.length),
      });
      if (res.ok) return res.body.items;
      // Every transform slot taken (TRANSFORMS_BUSY): the client gets the same 503, code and Retry-After.
      if (res.status === 503 && res.error?.code && res.retryAfter) {
        throw new AppError('UNAVAILABLE', res.error.code, res.error.message ?? 'The conversion service is busy', undefined, { 'Retry-After': res.retryAfter });
      }
      throw unavailable(`metadata answered ${res.status} for the delivery of ${key}`, 'METADATA_UNAVAILABLE');
    },
  };
}
