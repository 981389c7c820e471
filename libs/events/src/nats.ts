import { jetstreamManager, RetentionPolicy, StorageType, type StreamConfig } from '@nats-io/jetstream';
import { nanos, nkeyAuthenticator, type NatsConnection } from '@nats-io/nats-core';
import { connect } from '@nats-io/transport-node';
import { inboxPrefixOf } from './nats-accounts';
import { ASSET_EVENTS, ASSET_EVENTS_SUBJECTS, DAM_INTERNAL, DAM_INTERNAL_SUBJECTS, DATA_SCHEMAS, DATA_SCHEMAS_SUBJECTS, COLLECTIONS, COLLECTIONS_SUBJECTS, ASSET_PURGES, ASSET_PURGES_SUBJECTS } from './subjects';

const MINUTE_MS = 60_000;
const DAY_MS = 24 * 60 * MINUTE_MS;

/**
 * Connects and keeps reconnecting forever: a NATS restart must never end a service, it only pauses
 * publishing (the outbox keeps the events) and consuming. With `seed` (the identity's nkey seed,
 * `NATS_NKEY_SEED`) the connection is that identity, and replies come under its own inbox prefix, the only
 * one its permissions let it read.
 */
export async function connectNats(url: string, name: string, seed?: string): Promise<NatsConnection> {
  return connect({
    servers: url.split(',').map((s) => s.trim()),
    name,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 1000,
    waitOnFirstConnect: true,
    ...(seed ? { authenticator: nkeyAuthenticator(new TextEncoder().encode(seed)), inboxPrefix: inboxPrefixOf(name) } : {}),
  });
}

/**
 * Waits until the streams exist. Only metadata creates them (its identity alone may); the other services
 * start in any order and wait here instead of failing.
 */
export async function waitForStreams(
  nc: NatsConnection,
  names: readonly string[] = [ASSET_EVENTS, DAM_INTERNAL],
  opts: { timeoutMs?: number; onWait?: (missing: string[]) => void } = {},
): Promise<void> {
  const jsm = await jetstreamManager(nc);
  const deadline = Date.now() + (opts.timeoutMs ?? 120_000);
  for (let delay = 200; ; delay = Math.min(delay * 2, 5000)) {
    const missing: string[] = [];
    for (const name of names) {
      const exists = await jsm.streams.info(name).then(
        () => true,
        (error: unknown) => {
          if (isNotFound(error)) return false;
          throw error;
        },
      );
      if (!exists) missing.push(name);
    }
    if (missing.length === 0) return;
    if (Date.now() > deadline) throw new Error(`streams ${missing.join(', ')} do not exist (metadata creates them)`);
    opts.onWait?.(missing);
    await new Promise((r) => setTimeout(r, delay));
  }
}

/** For /readyz: a flush is a round trip to the server; during a reconnect it waits, so it is bounded. */
export function natsReachable(nc: NatsConnection, timeoutMs = 1000): Promise<boolean> {
  if (nc.isClosed()) return Promise.resolve(false);
  return Promise.race([
    nc.flush().then(
      () => true,
      () => false,
    ),
    new Promise<boolean>((resolve) => setTimeout(() => resolve(false), timeoutMs).unref()),
  ]);
}

export interface StreamOptions {
  /** How long ASSET_EVENTS keeps messages (subscribers that are away longer miss events). */
  assetEventsMaxAgeMs?: number;
  internalMaxAgeMs?: number;
  /** Window in which a repeated `Nats-Msg-Id` is dropped as a duplicate. */
  duplicateWindowMs?: number;
}

export function streamConfigs(options: StreamOptions = {}): Array<Partial<StreamConfig> & { name: string }> {
  const duplicateWindow = nanos(options.duplicateWindowMs ?? 2 * MINUTE_MS);
  return [
    {
      name: ASSET_EVENTS,
      subjects: [ASSET_EVENTS_SUBJECTS],
      storage: StorageType.File,
      retention: RetentionPolicy.Limits,
      max_age: nanos(options.assetEventsMaxAgeMs ?? 30 * DAY_MS),
      duplicate_window: duplicateWindow,
    },
    {
      // Limits retention (not work-queue) so several services may each hold their own durable consumer on an
      // internal subject; messages age out after a week.
      name: DAM_INTERNAL,
      subjects: [DAM_INTERNAL_SUBJECTS],
      storage: StorageType.File,
      retention: RetentionPolicy.Limits,
      max_age: nanos(options.internalMaxAgeMs ?? 7 * DAY_MS),
      duplicate_window: duplicateWindow,
    },
    {
      // The last message of each schema, for ever (a key-value store in all but name): a read model rebuilt from
      // scratch learns every schema as it is now.
      name: DATA_SCHEMAS,
      subjects: [DATA_SCHEMAS_SUBJECTS],
      storage: StorageType.File,
      retention: RetentionPolicy.Limits,
      max_msgs_per_subject: 1,
      duplicate_window: duplicateWindow,
    },
    {
      // The same for collections: each asset's memberships and each collection's visibility, as last changed.
      name: COLLECTIONS,
      subjects: [COLLECTIONS_SUBJECTS],
      storage: StorageType.File,
      retention: RetentionPolicy.Limits,
      max_msgs_per_subject: 1,
      duplicate_window: duplicateWindow,
    },
    {
      // Purges outlive the asset events they cancel by a day.
      name: ASSET_PURGES,
      subjects: [ASSET_PURGES_SUBJECTS],
      storage: StorageType.File,
      retention: RetentionPolicy.Limits,
      max_age: nanos((options.assetEventsMaxAgeMs ?? 30 * DAY_MS) + DAY_MS),
      duplicate_window: duplicateWindow,
    },
  ];
}

/** Creates the streams, or updates them to the current configuration. Safe to call from every service. */
export async function ensureStreams(nc: NatsConnection, options: StreamOptions = {}): Promise<void> {
  const jsm = await jetstreamManager(nc);
  for (const config of streamConfigs(options)) {
    const exists = await jsm.streams.info(config.name).then(
      () => true,
      (error: unknown) => {
        if (isNotFound(error)) return false;
        throw error;
      },
    );
    if (exists) {
      await jsm.streams.update(config.name, config);
    } else {
      await jsm.streams.add(config).catch(async (error: unknown) => {
        // Another service created it between our info and add.
        if (!String(error).includes('already in use')) throw error;
        await jsm.streams.update(config.name, config);
      });
    }
  }
}

export function isNotFound(error: unknown): boolean {
  const e = error as { code?: unknown; api_error?: { err_code?: number }; message?: string } | undefined;
  // 10059 stream not found, 10014 consumer not found
  const code = e?.api_error?.err_code;
  return code === 10059 || code === 10014 || /not found/i.test(e?.message ?? '');
}
