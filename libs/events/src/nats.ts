import { DiscardPolicy, jetstreamManager, RetentionPolicy, StorageType, type JetStreamManager, type StreamConfig } from '@nats-io/jetstream';
import { nanos, nkeyAuthenticator, type NatsConnection } from '@nats-io/nats-core';
import { connect } from '@nats-io/transport-node';
import { connectionWatch } from './connection';
import { inboxPrefixOf } from './nats-accounts';
import {
  ASSET_EVENTS,
  ASSET_EVENTS_SUBJECTS,
  DAM_INTERNAL,
  DAM_INTERNAL_SUBJECTS,
  DATA_SCHEMAS,
  DATA_SCHEMAS_SUBJECTS,
  COLLECTIONS,
  COLLECTIONS_SUBJECTS,
  ASSET_PURGES,
  ASSET_PURGES_SUBJECTS,
} from './subjects';

const MINUTE_MS = 60_000;
const DAY_MS = 24 * 60 * MINUTE_MS;

/** The servers of a `NATS_URL`: one URL, or a comma-separated list of them (the nodes of a cluster). */
export function natsServers(url: string): string[] {
  return url
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

/**
 * Connects and keeps reconnecting forever: a NATS restart must never end a service, it only pauses
 * publishing (the outbox keeps the events) and consuming. `url` may list several servers (a cluster, see
 * natsServers): the client starts on any of them, learns the rest of the cluster from the server, and when its
 * server goes away reconnects to another one. With `seed` (the identity's nkey seed, `NATS_NKEY_SEED`) the
 * connection is that identity, and replies come under its own inbox prefix, the only one its permissions let it
 * read.
 */
export async function connectNats(url: string, name: string, seed?: string): Promise<NatsConnection> {
  const nc = await connect({
    servers: natsServers(url),
    name,
    // Never give up: every server of the list (and those the cluster announces) is tried in turn, each at most
    // once a second.
    maxReconnectAttempts: -1,
    reconnectTimeWait: 1000,
    waitOnFirstConnect: true,
    // A server that vanished without closing the connection (its host lost, a partition) is noticed after two
    // unanswered pings: 40 s at most instead of the client's default 4 minutes, then the next server is tried.
    pingInterval: 20_000,
    maxPingOut: 2,
    ...(seed ? { authenticator: nkeyAuthenticator(new TextEncoder().encode(seed)), inboxPrefix: inboxPrefixOf(name) } : {}),
  });
  // Watched from the start, so that calls know when the connection is down (see natsCall).
  connectionWatch(nc);
  return nc;
}

/**
 * JetStream answers nothing for a few seconds while a stream, or the cluster's meta group, elects a leader (a node
 * died or restarts, a stream is being scaled): a request then times out or finds no responder.
 */
export function isTransientJetStreamError(error: unknown): boolean {
  const e = error as { name?: unknown } | undefined;
  return e?.name === 'TimeoutError' || /\btimeout\b|no responders|jetstream is not enabled/i.test(String(error));
}

/** Runs `fn` again after a transient JetStream failure (growing pauses) until `timeoutMs` has passed. */
export async function retryTransient<T>(
  fn: () => Promise<T>,
  timeoutMs: number,
  isRetryable: (error: unknown) => boolean = isTransientJetStreamError,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (let delay = 250; ; delay = Math.min(delay * 2, 2000)) {
    try {
      return await fn();
    } catch (error) {
      if (!isRetryable(error) || Date.now() + delay > deadline) throw error;
      await new Promise((r) => setTimeout(r, delay));
    }
  }
}

/** How long start-up JetStream calls wait out leader elections (a few seconds each) before giving up. */
export const ELECTION_RETRY_MS = 30_000;

/**
 * Waits until the streams exist. Only metadata creates them (its identity alone may); the other services
 * start in any order and wait here instead of failing, also while the cluster elects a leader.
 */
export async function waitForStreams(
  nc: NatsConnection,
  names: readonly string[] = [ASSET_EVENTS, DAM_INTERNAL],
  opts: { timeoutMs?: number; onWait?: (missing: string[]) => void } = {},
): Promise<void> {
  const deadline = Date.now() + (opts.timeoutMs ?? 120_000);
  const jsm = await retryTransient(() => jetstreamManager(nc), opts.timeoutMs ?? 120_000);
  let lastError: unknown;
  for (let delay = 200; ; delay = Math.min(delay * 2, 5000)) {
    const missing: string[] = [];
    for (const name of names) {
      const exists = await jsm.streams.info(name).then(
        () => true,
        (error: unknown) => {
          if (isNotFound(error)) return false;
          if (!isTransientJetStreamError(error)) throw error;
          lastError = error;
          return false;
        },
      );
      if (!exists) missing.push(name);
    }
    if (missing.length === 0) return;
    if (Date.now() > deadline) {
      const cause = lastError === undefined ? '' : ` (last: ${String(lastError)})`;
      throw new Error(`streams ${missing.join(', ')} do not exist (metadata creates them)${cause}`);
    }
    opts.onWait?.(missing);
    await new Promise((r) => setTimeout(r, delay));
  }
}

/** For /readyz: a flush is a round trip to the server; during a reconnect it waits, so it is bounded. */
export function natsReachable(nc: NatsConnection, timeoutMs = 1000): Promise<boolean> {
  if (nc.isClosed() || !connectionWatch(nc).connected()) return Promise.resolve(false);
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
  /**
   * Copies of every stream in a JetStream cluster (`NATS_STREAM_REPLICAS`, 1 by default: a single server takes
   * no more). Durable consumers follow their stream's replicas.
   */
  replicas?: number;
  /**
   * The bytes the five streams and the KV buckets may hold on each server (`NATS_STREAMS_MAX_BYTES`), split by
   * STREAM_BYTE_SHARES into each stream's `max_bytes` (the buckets' shares are KV_BUCKET_BYTE_SHARES, kv-bucket.ts);
   * unset: no limit but JetStream's own `max_file_store`. It must stay below `max_file_store` (JetStream refuses a
   * stream whose limit it cannot reserve), with room for raft.
   */
  maxBytes?: number | undefined;
}

export const STREAMS = [ASSET_EVENTS, DAM_INTERNAL, DATA_SCHEMAS, COLLECTIONS, ASSET_PURGES] as const;
export type StreamName = (typeof STREAMS)[number];

/**
 * Each stream's part of `maxBytes`: 98 % between them, the rest the KV buckets' (KV_BUCKET_BYTE_SHARES). Asset
 * events are the largest (every change of every asset, kept 30 days; they took the 8 % the Idempotency-Key and
 * pending-upload buckets had before those moved to PostgreSQL, issue 35); the internal stream holds commands,
 * reports and usage records for a week; collections one state per asset in a collection; schemas and purges are small.
 */
export const STREAM_BYTE_SHARES: Readonly<Record<StreamName, number>> = {
  [ASSET_EVENTS]: 0.48,
  [DAM_INTERNAL]: 0.27,
  [COLLECTIONS]: 0.13,
  [DATA_SCHEMAS]: 0.05,
  [ASSET_PURGES]: 0.05,
};

/** Each stream's `max_bytes` of a budget (whole bytes; their sum never passes the budget). */
export function streamMaxBytes(budget: number): Record<StreamName, number> {
  return Object.fromEntries(STREAMS.map((s) => [s, Math.floor(budget * STREAM_BYTE_SHARES[s])])) as Record<StreamName, number>;
}

/**
 * What a full stream does (its `max_bytes` reached). The ones kept for a time drop their oldest messages: ASSET_EVENTS'
 * replay window shrinks, and in DAM_INTERNAL (limits retention keeps messages after they are acknowledged) the oldest
 * are in practice consumed ones; a refusal there would stop metadata's outbox, which publishes every stream in commit
 * order, for as long as the stream stays full of consumed messages (up to its week). A job command dropped before a
 * worker read it (a worker kind behind by the whole limit) is not lost: its job is in PostgreSQL and the lease sweep
 * hands it out again. The ones kept for ever (one message per schema or collection state) refuse new messages
 * instead: dropping one would silently remove a schema or a membership from every read model rebuilt later.
 */
export const STREAM_DISCARD: Readonly<Record<StreamName, DiscardPolicy>> = {
  [ASSET_EVENTS]: DiscardPolicy.Old,
  [DAM_INTERNAL]: DiscardPolicy.Old,
  [ASSET_PURGES]: DiscardPolicy.Old,
  [DATA_SCHEMAS]: DiscardPolicy.New,
  [COLLECTIONS]: DiscardPolicy.New,
};

export function streamConfigs(options: StreamOptions = {}): Array<Partial<StreamConfig> & { name: StreamName }> {
  const duplicateWindow = nanos(options.duplicateWindowMs ?? 2 * MINUTE_MS);
  const replicas = options.replicas ?? 1;
  // Both are always sent: an update merges into the stream's configuration, so a limit left out would stay.
  const limits = (name: StreamName) => ({
    max_bytes: options.maxBytes === undefined ? -1 : streamMaxBytes(options.maxBytes)[name],
    discard: STREAM_DISCARD[name],
  });
  return [
    {
      name: ASSET_EVENTS,
      subjects: [ASSET_EVENTS_SUBJECTS],
      ...limits(ASSET_EVENTS),
      storage: StorageType.File,
      retention: RetentionPolicy.Limits,
      max_age: nanos(options.assetEventsMaxAgeMs ?? 30 * DAY_MS),
      duplicate_window: duplicateWindow,
      num_replicas: replicas,
    },
    {
      // Limits retention (not work-queue) so several services may each hold their own durable consumer on an
      // internal subject; messages age out after a week.
      name: DAM_INTERNAL,
      subjects: [DAM_INTERNAL_SUBJECTS],
      ...limits(DAM_INTERNAL),
      storage: StorageType.File,
      retention: RetentionPolicy.Limits,
      max_age: nanos(options.internalMaxAgeMs ?? 7 * DAY_MS),
      duplicate_window: duplicateWindow,
      num_replicas: replicas,
    },
    {
      // The last message of each schema, for ever (a key-value store in all but name): a read model rebuilt from
      // scratch learns every schema as it is now.
      name: DATA_SCHEMAS,
      subjects: [DATA_SCHEMAS_SUBJECTS],
      ...limits(DATA_SCHEMAS),
      storage: StorageType.File,
      retention: RetentionPolicy.Limits,
      max_msgs_per_subject: 1,
      duplicate_window: duplicateWindow,
      num_replicas: replicas,
    },
    {
      // The same for collections: each asset's memberships and each collection's visibility, as last changed.
      name: COLLECTIONS,
      subjects: [COLLECTIONS_SUBJECTS],
      ...limits(COLLECTIONS),
      storage: StorageType.File,
      retention: RetentionPolicy.Limits,
      max_msgs_per_subject: 1,
      duplicate_window: duplicateWindow,
      num_replicas: replicas,
    },
    {
      // Purges outlive the asset events they cancel by a day.
      name: ASSET_PURGES,
      subjects: [ASSET_PURGES_SUBJECTS],
      ...limits(ASSET_PURGES),
      storage: StorageType.File,
      retention: RetentionPolicy.Limits,
      max_age: nanos((options.assetEventsMaxAgeMs ?? 30 * DAY_MS) + DAY_MS),
      duplicate_window: duplicateWindow,
      num_replicas: replicas,
    },
  ];
}

/** What ensureStreams did to one stream; `previousReplicas` differs from `replicas` when it scaled the stream. */
export interface EnsuredStream {
  name: string;
  action: 'created' | 'updated';
  replicas: number;
  previousReplicas?: number;
  /**
   * A stream that keeps its messages for ever (DATA_SCHEMAS, COLLECTIONS) already holds `holds` bytes, at least its
   * share `wanted` of the budget: its limit was left as it was, since JetStream would delete its oldest states to fit.
   */
  maxBytesNotLowered?: { wanted: number; holds: number; kept: number };
}

/**
 * Creates the streams, or updates them to the current configuration: the configuration wins, replicas included,
 * so a stream created with 1 replica is scaled to `replicas` (and back down when it is lowered). Safe to call from
 * several processes at once: a stream another one created in the meantime is updated instead. Leader elections
 * (a node restarting, a stream being scaled by another process) are waited out for up to 30 s.
 */
export async function ensureStreams(nc: NatsConnection, options: StreamOptions = {}): Promise<EnsuredStream[]> {
  const jsm = await retryTransient(() => jetstreamManager(nc), ELECTION_RETRY_MS);
  const done: EnsuredStream[] = [];
  for (const config of streamConfigs(options)) {
    const replicas = config.num_replicas ?? 1;
    try {
      done.push(await retryTransient(() => ensureStream(jsm, config, replicas), ELECTION_RETRY_MS, isTransientOrRacingCreate));
    } catch (error) {
      // JetStream reserves every stream's max_bytes on its servers up front: a budget it cannot hold is refused here.
      const hint = /insufficient storage/i.test(String(error)) ? " (NATS_STREAMS_MAX_BYTES must stay below JetStream's max_file_store)" : '';
      throw new Error(
        `stream ${config.name} (${replicas} replica${replicas === 1 ? '' : 's'}): ${error instanceof Error ? error.message : String(error)}${hint}`,
        {
          cause: error,
        },
      );
    }
  }
  return done;
}

/**
 * Several processes creating the same stream at once on a cluster: while one's create is still being applied the
 * meta leader may refuse another's update of it as overlapping subjects (seen on a loaded machine); the next try
 * finds the stream created.
 */
const isTransientOrRacingCreate = (error: unknown): boolean =>
  isTransientJetStreamError(error) || /subjects overlap with an existing stream/i.test(String(error));

/** One stream created or updated; repeatable (the whole step runs again after a transient failure). */
async function ensureStream(jsm: JetStreamManager, config: Partial<StreamConfig> & { name: string }, replicas: number): Promise<EnsuredStream> {
  const existing = await jsm.streams.info(config.name).then(
    (info) => info,
    (error: unknown) => {
      if (isNotFound(error)) return undefined;
      throw error;
    },
  );
  if (!existing) {
    const created = await jsm.streams.add(config).then(
      () => true,
      (error: unknown) => {
        // Another process created it between our info and add, with a configuration of its own (an identical one
        // is no error).
        if (!String(error).includes('already in use')) throw error;
        return false;
      },
    );
    if (created) return { name: config.name, action: 'created', replicas };
  }
  const before = existing ?? (await jsm.streams.info(config.name));
  // A lower max_bytes applies at once, deleting the oldest messages whatever the discard policy: right for a window of
  // events, never for the last state of each schema or collection.
  const wanted = config.max_bytes ?? -1;
  const notLowered = config.discard === DiscardPolicy.New && wanted >= 0 && before.state.bytes >= wanted;
  await jsm.streams.update(config.name, notLowered ? { ...config, max_bytes: before.config.max_bytes } : config);
  return {
    name: config.name,
    action: 'updated',
    replicas,
    previousReplicas: before.config.num_replicas,
    ...(notLowered ? { maxBytesNotLowered: { wanted, holds: before.state.bytes, kept: before.config.max_bytes } } : {}),
  };
}

export function isNotFound(error: unknown): boolean {
  const e = error as { code?: unknown; api_error?: { err_code?: number }; message?: string } | undefined;
  // 10059 stream not found, 10014 consumer not found
  const code = e?.api_error?.err_code;
  return code === 10059 || code === 10014 || /not found/i.test(e?.message ?? '');
}
