import type { NatsConnection } from '@nats-io/nats-core';
import { connectionWatch, SUBJECT_ASSETS_CHANGED } from '@dam/events';
import type { Running, Worker } from '@dam/http';
import type { Logger } from '@dam/logging';
import type { ReadCache } from '../domain/read-cache';

/** `*` in a notice: notices may have been missed (metadata's relay was not listening); every kept answer goes. */
const ALL_ASSETS = '*';

/**
 * Follows metadata's notices of changed assets (a plain subscription: a notice matters now or never) and drops what
 * the Get Data cache kept of them. While the connection is down notices are lost, so the cache serves nothing until
 * it is back, and starts empty then.
 */
export function assetChangeFollower(nc: NatsConnection, cache: ReadCache, logger: Logger): Worker {
  return {
    kind: 'poller',
    name: 'asset-change-follower',
    async start(): Promise<Running> {
      let stopped = false;
      let ended = false;
      const sub = nc.subscribe(SUBJECT_ASSETS_CHANGED, {
        callback: (err, m) => {
          if (err) {
            // Refused (no permission for the subject: an older dam-nats-auth) or ended: no notice will come.
            ended = true;
            cache.setEnabled(false);
            logger.warn({ err }, 'asset change notices ended: Get Data is no longer cached');
            return;
          }
          let ids: unknown;
          try {
            ids = m.json();
          } catch {
            ids = undefined;
          }
          if (!Array.isArray(ids)) {
            // Unreadable: which assets changed is unknown.
            cache.clear();
            return;
          }
          for (const id of ids) {
            if (id === ALL_ASSETS) cache.clear();
            else if (typeof id === 'string') cache.invalidate(id);
          }
        },
      });
      // Down (disconnected, stale, closed): off; back: on, empty, unless the subscription itself ended.
      const hearing = () => !stopped && !ended && !sub.isClosed() && !nc.isClosed();
      connectionWatch(nc).onChange((up) => {
        if (!stopped) cache.setEnabled(up && hearing());
      });
      // Served from the cache only once the server has the subscription: no notice after that is missed. Not awaited:
      // with NATS away the gateway serves without the cache (a reconnection turns it on).
      nc.flush().then(
        () => {
          if (hearing()) cache.setEnabled(true);
        },
        () => undefined,
      );
      return {
        async stop() {
          stopped = true;
          cache.setEnabled(false);
          sub.unsubscribe();
        },
      };
    },
  };
}
