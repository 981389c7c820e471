import type { NatsConnection } from '@nats-io/nats-core';
import type { Pool, PoolClient } from '@dam/db';
import { connectionWatch, errorFields, SUBJECT_ASSETS_CHANGED } from '@dam/events';
import type { Running, Worker } from '@dam/http';
import type { Logger } from '@dam/logging';

/** The channel migration 022's trigger announces every committed change of an asset's record on (payload: its id). */
export const ASSET_CHANGED_CHANNEL = 'asset_changed';
/** Everything: what a gateway hears when notices may have been missed (this relay was not listening for a while). */
export const ALL_ASSETS = '*';
/** Ids per NATS message: a bulk change of 10,000 assets is 20 messages, not 10,000. */
const IDS_PER_NOTICE = 500;

/** The relay of notices, and what a write's answer waits for. */
export interface AssetChangeNotices {
  worker: Worker;
  /**
   * Resolves once every change committed before the call has been announced and NATS has it (at once when nothing
   * listens or NATS is down: the gateways then keep nothing). A write's answer waits for it, so a read sent after the
   * answer, through any gateway replica, comes after the notice.
   */
  settled(): Promise<void>;
}

/**
 * Relays the database's `asset_changed` notices to SUBJECT_ASSETS_CHANGED, for the gateways' Get Data caches (issue
 * 33): the ids heard in one turn of the event loop go out together. While its connection is down no notice is heard,
 * so each (re)start of listening first announces `*` (every gateway empties its cache). One pool connection is held
 * for it, as the outbox relay holds one.
 */
export function assetChangeNotices(pool: Pool, nc: NatsConnection, logger: Logger, retryMs = 1000): AssetChangeNotices {
  const watch = connectionWatch(nc);
  let settle: () => Promise<void> = async () => undefined;
  const worker: Worker = {
    kind: 'poller',
    name: 'asset-change-notices',
    async start(): Promise<Running> {
      let stopping = false;
      /** The listening connection, and how to give it back (once: dropped when `broken`). */
      let listener: { client: PoolClient; giveBack(broken: boolean): void } | undefined;
      let pending = new Set<string>();
      let flushQueued = false;

      const publish = (ids: string[]): void => {
        try {
          nc.publish(SUBJECT_ASSETS_CHANGED, JSON.stringify(ids));
        } catch (error) {
          // NATS closed (shutting down): the gateways empty their caches when their own connection comes back.
          logger.debug({ ...errorFields(error) }, 'asset change notice not published');
        }
      };
      const flush = (): void => {
        flushQueued = false;
        const ids = [...pending];
        pending = new Set();
        for (let i = 0; i < ids.length; i += IDS_PER_NOTICE) publish(ids.slice(i, i + IDS_PER_NOTICE));
      };
      const heard = (msg: { channel: string; payload?: string }): void => {
        if (msg.channel !== ASSET_CHANGED_CHANNEL || !msg.payload) return;
        pending.add(msg.payload);
        if (!flushQueued) {
          flushQueued = true;
          setImmediate(flush);
        }
      };
      const retry = (): void => {
        if (!stopping) setTimeout(() => void listen(), retryMs).unref();
      };
      const listen = async (): Promise<void> => {
        if (stopping) return;
        try {
          const client = await pool.connect();
          let given = false;
          const giveBack = (broken: boolean): void => {
            if (given) return;
            given = true;
            client.removeListener('notification', heard);
            client.removeListener('error', lost);
            // Back to the pool with nothing of ours attached (or dropped, when its connection broke).
            client.release(broken);
            if (listener?.client === client) listener = undefined;
          };
          const lost = (error: Error): void => {
            logger.warn({ ...errorFields(error) }, 'asset change listener lost: gateways keep Get Data until it is back (at most their TTL)');
            giveBack(true);
            retry();
          };
          client.on('notification', heard);
          client.on('error', lost);
          try {
            await client.query(`LISTEN ${ASSET_CHANGED_CHANNEL}`);
          } catch (error) {
            giveBack(true);
            throw error;
          }
          listener = { client, giveBack };
          // Changes made before this moment were not heard by this relay: every gateway starts over.
          publish([ALL_ASSETS]);
          if (stopping) await release();
        } catch (error) {
          logger.warn({ ...errorFields(error) }, 'asset change listener could not start: trying again');
          retry();
        }
      };
      const release = async (): Promise<void> => {
        const current = listener;
        if (!current) return;
        await current.client.query(`UNLISTEN ${ASSET_CHANGED_CHANNEL}`).catch(() => undefined);
        current.giveBack(false);
      };
      /**
       * One round: a query on the listening connection. PostgreSQL sends a listening session the notifications committed
       * before it reads a command ahead of that command's result, so once it answers, every change committed before the
       * round began has been heard; they are published at once and NATS is asked to confirm it has them. Callers that
       * arrive during a round wait for the next one (theirs may have committed after it began).
       */
      let waiting: Array<() => void> = [];
      let round: Promise<void> | undefined;
      const runRounds = async (): Promise<void> => {
        await Promise.resolve(); // `round` is set before the first round can end
        while (waiting.length > 0) {
          const done = waiting;
          waiting = [];
          const current = listener;
          try {
            if (current && watch.connected()) {
              await current.client.query('SELECT 1');
              flush();
              await watch.untilDisconnected(nc.flush());
            }
          } catch {
            // The listener or NATS went away: the gateways drop everything when either comes back.
          }
          for (const resolve of done) resolve();
        }
        round = undefined;
      };
      settle = () =>
        new Promise<void>((resolve) => {
          waiting.push(resolve);
          round ??= runRounds();
        });

      await listen();
      return {
        async stop() {
          stopping = true;
          settle = async () => undefined;
          await round;
          await release();
          flush();
        },
      };
    },
  };
  return { worker, settled: () => settle() };
}
