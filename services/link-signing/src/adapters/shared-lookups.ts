import type { AccessOwner, DeliveryResponse } from '@dam/internal-api';
import type { Principal } from '@dam/auth-tokens';
import type { SuiteClients } from '../domain/ports';

export interface SharedLookupOptions {
  /**
   * How long auth's answer about an accessID (its owner, active or not, or none) is reused at the edge. It bounds
   * how long a link keeps working after its accessID was rotated or its user disabled. 0: every request asks.
   */
  accessTtlMs: number;
  now?: () => number;
  /** Past this many accessIDs the cache starts over (a flood of distinct valid links cannot grow it for ever). */
  maxEntries?: number;
}

const MAX_ENTRIES = 10_000;

/**
 * The edge's calls to auth and metadata, shared by the requests of one link (security review F13): a signed link
 * is public, so without this every hit of a link embedded in a page costs auth one lookup and metadata one
 * delivery call. The accessID's owner is cached for `accessTtlMs` and concurrent lookups of one accessID wait for
 * one call; concurrent delivery calls for the same user, assets and key wait for one call and are not cached (an
 * asset deleted or made unreadable stops being served at once). Failures (auth or metadata down) are never cached.
 */
export function sharedLookups(clients: SuiteClients, opts: SharedLookupOptions): SuiteClients {
  const now = opts.now ?? Date.now;
  const max = opts.maxEntries ?? MAX_ENTRIES;
  const owners = new Map<string, { owner: AccessOwner | undefined; at: number }>();
  const ownersInFlight = new Map<string, Promise<AccessOwner | undefined>>();
  const deliveriesInFlight = new Map<string, Promise<DeliveryResponse['items']>>();

  const once = <T>(inFlight: Map<string, Promise<T>>, key: string, call: () => Promise<T>): Promise<T> => {
    let pending = inFlight.get(key);
    if (!pending) {
      pending = call().finally(() => inFlight.delete(key));
      inFlight.set(key, pending);
    }
    return pending;
  };

  return {
    accessIdOf: (principal) => clients.accessIdOf(principal),
    accessOwner(accessId) {
      const cached = owners.get(accessId);
      if (cached && now() - cached.at < opts.accessTtlMs) return Promise.resolve(cached.owner);
      return once(ownersInFlight, accessId, async () => {
        const owner = await clients.accessOwner(accessId);
        if (opts.accessTtlMs > 0) {
          if (owners.size >= max) owners.clear();
          owners.set(accessId, { owner, at: now() });
        }
        return owner;
      });
    },
    delivery(principal: Principal, ids, key, transform) {
      // What metadata's answer depends on: who asks (group, user, role) and what for (a transform is another object).
      const id = JSON.stringify([principal.group_id, principal.user_id, principal.role_id, ids, key, transform ?? null]);
      return once(deliveriesInFlight, id, () => clients.delivery(principal, ids, key, transform));
    },
  };
}
