import { DeliverPolicy, jetstream } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { ASSET_EVENTS, ASSET_EVENTS_SUBJECTS, assetEventTypeOf } from '@dam/events';
import type { SearchIndexRepository } from './adapters/search-index.repository';
import { applyAssetEvent, assetEventEnvelope } from './consumers/asset-events.consumer';

/**
 * Rebuilds the read model from scratch: empties it, then applies every event still in ASSET_EVENTS in stream
 * order (an ordered consumer from the first message) until it has caught up with the stream as it was when the
 * replay started. A running service may keep applying new events meanwhile: versions make both orders end equal.
 */
export async function replayIndex(nc: NatsConnection, index: SearchIndexRepository): Promise<{ events: number; applied: number; ms: number }> {
  const started = performance.now();
  const js = jetstream(nc);
  const last = (await (await js.streams.get(ASSET_EVENTS)).info()).state.last_seq;
  await index.clear();
  let events = 0;
  let applied = 0;
  if (last > 0) {
    const consumer = await js.consumers.get(ASSET_EVENTS, { filter_subjects: ASSET_EVENTS_SUBJECTS, deliver_policy: DeliverPolicy.All });
    const messages = await consumer.consume();
    for await (const m of messages) {
      events += 1;
      const e = assetEventEnvelope.safeParse(m.json());
      if (assetEventTypeOf(m.subject) && e.success && (await applyAssetEvent(index, e.data))) applied += 1;
      if (m.seq >= last) break;
    }
    await messages.close();
  }
  return { events, applied, ms: Math.round(performance.now() - started) };
}
