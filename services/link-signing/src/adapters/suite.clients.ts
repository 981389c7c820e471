import { badRequest, forbidden, notFound, unavailable, type AppError } from '@dam/errors';
import {
  accessIdResponse,
  accessOwnerResponse,
  deliveryResponse,
  INTERNAL_PATHS,
  internalClient,
  type AccessOwner,
  type DeliveryResponse,
  type InternalClientOptions,
} from '@dam/internal-api';
import { permissionsFor, ROLE_NAMES, type Principal } from '@dam/auth-tokens';

export interface SuiteClients {
  /** The accessID the links this caller mints are signed under (auth): its user's, or its API key's. */
  accessIdOf(principal: Principal): Promise<string>;
  /** Whose links carry this accessID; undefined when no user or live key has it (rotated away, revoked). */
  accessOwner(accessId: string): Promise<AccessOwner | undefined>;
  /** Where each asset's bytes for `key` are, as `principal` may read them (metadata). */
  delivery(principal: Principal, ids: readonly string[], key: string): Promise<DeliveryResponse['items']>;
}

/** metadata's answer for one id that cannot be delivered, as the same error to the client (404s stay 404s). */
export const deliveryError = (e: { status: number; code: string; message: string }): AppError =>
  e.status === 404 ? notFound(e.code, e.message) : e.status === 403 ? forbidden(e.message, e.code) : badRequest(e.code, e.message);

/** The principal a link acts as at the edge: the user behind its accessID, with the permissions of their role. */
export function principalOfOwner(owner: AccessOwner): Principal {
  return {
    user_id: owner.user_id,
    group_id: owner.group_id,
    role_id: owner.role_id,
    role_name: ROLE_NAMES[owner.role_id] ?? 'CREATOR',
    permissions: permissionsFor(owner.role_id),
    via: 'jwt',
  };
}

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
    async delivery(principal, ids, key) {
      const res = await metadata.call({ method: 'POST', path: INTERNAL_PATHS.delivery, body: { ids, key }, principal, response: deliveryResponse });
      if (res.ok) return res.body.items;
      throw unavailable(`metadata answered ${res.status} for the delivery of ${key}`, 'METADATA_UNAVAILABLE');
    },
  };
}
