import {
  ASSET_EVENTS,
  ASSET_EVENTS_SUBJECTS,
  ASSET_PURGES,
  ASSET_PURGES_SUBJECTS,
  assetEventTypeOf,
  assetPurgeSchema,
  COLLECTIONS,
  COLLECTIONS_SUBJECTS,
  DATA_SCHEMAS,
  DATA_SCHEMAS_SUBJECTS,
  dataSchemaSavedSchema,
} from '@dam/events';
import type { RebuildableReadModel, StreamReplay } from '../domain/ports';
import { applyAssetEvent, applyCollectionMessage, applyPurge, applySchemaSaved, assetEventEnvelope } from './apply-read-model.use-case';

export interface ReplayDeps {
  model: RebuildableReadModel;
  streams: StreamReplay;
}

export interface ReplayReport {
  events: number;
  applied: number;
  schemas: number;
  collections: number;
  purges: number;
  ms: number;
}

/**
 * Rebuilds the read model from scratch: empties it, reads every schema in DATA_SCHEMAS and every collection
 * message in COLLECTIONS (both streams keep each subject's last message) and every purge in ASSET_PURGES (kept a
 * day longer than asset events), then applies every event still in ASSET_EVENTS until it has caught up with the
 * streams as they were when the replay started. A running service may keep applying new events meanwhile: versions
 * make both orders end equal (a purge's tombstone outranks the purged asset's events). One replay at a time: a
 * second one is refused while the first runs.
 */
export async function replayIndex(deps: ReplayDeps): Promise<ReplayReport> {
  return deps.model.exclusively('search-replay', () => replay(deps));
}

async function replay({ model, streams }: ReplayDeps): Promise<ReplayReport> {
  const started = performance.now();
  await model.clear();
  const schemas = await streams.readAll(DATA_SCHEMAS, DATA_SCHEMAS_SUBJECTS, async (_subject, body) => {
    const s = dataSchemaSavedSchema.safeParse(body);
    return s.success && (await applySchemaSaved(model, s.data));
  });
  const collections = await streams.readAll(COLLECTIONS, COLLECTIONS_SUBJECTS, (subject, body) => applyCollectionMessage(model, subject, body));
  const purges = await streams.readAll(ASSET_PURGES, ASSET_PURGES_SUBJECTS, async (_subject, body) => {
    const p = assetPurgeSchema.safeParse(body);
    return p.success && (await applyPurge(model, p.data)) > 0;
  });
  const events = await streams.readAll(ASSET_EVENTS, ASSET_EVENTS_SUBJECTS, async (subject, body) => {
    const e = assetEventEnvelope.safeParse(body);
    return Boolean(assetEventTypeOf(subject)) && e.success && (await applyAssetEvent(model, e.data));
  });
  return {
    events: events.read,
    applied: events.applied,
    schemas: schemas.applied,
    collections: collections.applied,
    purges: purges.applied,
    ms: Math.round(performance.now() - started),
  };
}
