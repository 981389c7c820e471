import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { ASSET_EVENTS, ASSET_EVENTS_SUBJECTS, ASSET_PURGES, ASSET_PURGES_SUBJECTS, assetEventTypeOf, assetPurgeSchema, COLLECTIONS, COLLECTIONS_SUBJECTS, DATA_SCHEMAS, DATA_SCHEMAS_SUBJECTS, dataSchemaSavedSchema, replayConsumerName } from '@dam/events';
import type { SearchIndexRepository } from './adapters/search-index.repository';
import { applyAssetEvent, assetEventEnvelope } from './consumers/asset-events.consumer';
import { applySchemaSaved } from './consumers/data-schemas.consumer';
import { applyCollectionMessage } from './consumers/collections.consumer';
import { applyPurge } from './consumers/asset-purges.consumer';

/**
 * Rebuilds the read model from scratch: empties it, reads every schema in DATA_SCHEMAS and every collection
 * message in COLLECTIONS (both streams keep each subject's last message) and every purge in ASSET_PURGES (kept a
 * day longer than asset events), then applies every event still in ASSET_EVENTS (a consumer from the first message,
 * under the fixed name `search-replay-<stream>` that only the search identity may use: security review F4) until it
 * has caught up with the streams as they were when the replay started. A running service may keep applying new
 * events meanwhile: versions make both orders end equal (a purge's tombstone outranks the purged asset's events).
 * One replay at a time (the consumers' names are fixed): a second one is refused while the first runs.
 */
export async function replayIndex(
  nc: NatsConnection,
  index: SearchIndexRepository,
): Promise<{ events: number; applied: number; schemas: number; collections: number; purges: number; ms: number }> {
  return index.exclusively('search-replay', () => replay(nc, index));
}

async function replay(nc: NatsConnection, index: SearchIndexRepository): Promise<{ events: number; applied: number; schemas: number; collections: number; purges: number; ms: number }> {
  const started = performance.now();
  await index.clear();
  const schemas = await readStream(nc, DATA_SCHEMAS, DATA_SCHEMAS_SUBJECTS, async (_subject, body) => {
    const s = dataSchemaSavedSchema.safeParse(body);
    return s.success && (await applySchemaSaved(index, s.data));
  });
  const collections = await readStream(nc, COLLECTIONS, COLLECTIONS_SUBJECTS, (subject, body) => applyCollectionMessage(index, subject, body));
  const purges = await readStream(nc, ASSET_PURGES, ASSET_PURGES_SUBJECTS, async (_subject, body) => {
    const p = assetPurgeSchema.safeParse(body);
    return p.success && (await applyPurge(index, p.data)) > 0;
  });
  const events = await readStream(nc, ASSET_EVENTS, ASSET_EVENTS_SUBJECTS, async (subject, body) => {
    const e = assetEventEnvelope.safeParse(body);
    return Boolean(assetEventTypeOf(subject)) && e.success && (await applyAssetEvent(index, e.data));
  });
  return { events: events.read, applied: events.applied, schemas: schemas.applied, collections: collections.applied, purges: purges.applied, ms: Math.round(performance.now() - started) };
}

/** A replay consumer left behind goes away after this long without a fetch. */
const REPLAY_IDLE_NS = 5 * 60 * 1e9;

/** Every message of a stream up to its last one when called, in order; counts those read and those applied. */
async function readStream(
  nc: NatsConnection,
  stream: string,
  filter: string,
  apply: (subject: string, body: unknown) => Promise<boolean>,
): Promise<{ read: number; applied: number }> {
  const js = jetstream(nc);
  const last = (await (await js.streams.get(stream)).info()).state.last_seq;
  let read = 0;
  let applied = 0;
  if (last === 0) return { read, applied };
  const jsm = await jetstreamManager(nc);
  const name = replayConsumerName(stream);
  // What a replay that crashed left behind (it would expire on its own after REPLAY_IDLE_NS).
  await jsm.consumers.delete(stream, name).catch(() => undefined);
  await jsm.consumers.add(stream, { name, filter_subject: filter, deliver_policy: DeliverPolicy.All, ack_policy: AckPolicy.Explicit, inactive_threshold: REPLAY_IDLE_NS });
  try {
    const messages = await (await js.consumers.get(stream, name)).consume();
    for await (const m of messages) {
      read += 1;
      if (await apply(m.subject, m.json())) applied += 1;
      m.ack();
      if (m.seq >= last) break;
    }
    await messages.close();
  } finally {
    await jsm.consumers.delete(stream, name).catch(() => undefined);
  }
  return { read, applied };
}
