import type { RebuildableReadModel, StreamReplay } from '../domain/ports';
import { READ_MODEL_FEEDS, type ReadModelFeedName } from './apply-read-model.use-case';

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

/** The order of a rebuild: schemas (their paths) and collections before the assets, purges before the events they outrank. */
const REBUILD_ORDER: readonly ReadModelFeedName[] = ['schemas', 'collections', 'purges', 'events'];

async function replay({ model, streams }: ReplayDeps): Promise<ReplayReport> {
  const started = performance.now();
  await model.clear();
  const counts = {} as Record<ReadModelFeedName, { read: number; applied: number }>;
  for (const name of REBUILD_ORDER) {
    const f = READ_MODEL_FEEDS[name];
    counts[name] = await streams.readAll(f.stream, f.subjects, async (subject, body) => {
      const parsed = f.schema.safeParse(body);
      return parsed.success && (await f.apply(model, parsed.data, subject));
    });
  }
  return {
    events: counts.events.read,
    applied: counts.events.applied,
    schemas: counts.schemas.applied,
    collections: counts.collections.applied,
    purges: counts.purges.applied,
    ms: Math.round(performance.now() - started),
  };
}
