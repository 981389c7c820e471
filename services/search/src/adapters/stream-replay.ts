import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { replayConsumerName } from '@dam/events';
import type { StreamReplay } from '../domain/ports';

/** A replay consumer left behind goes away after this long without a fetch. */
const REPLAY_IDLE_NS = 5 * 60 * 1e9;

/**
 * Reads a JetStream stream from its first message through a consumer under the fixed name
 * `search-replay-<stream>` that only the search identity may use (security review F4), removed afterwards.
 */
export function natsStreamReplay(nc: NatsConnection): StreamReplay {
  return {
    async readAll(stream, filter, apply) {
      const js = jetstream(nc);
      const last = (await (await js.streams.get(stream)).info()).state.last_seq;
      let read = 0;
      let applied = 0;
      if (last === 0) return { read, applied };
      const jsm = await jetstreamManager(nc);
      const name = replayConsumerName(stream);
      // What a replay that crashed left behind (it would expire on its own after REPLAY_IDLE_NS).
      await jsm.consumers.delete(stream, name).catch(() => undefined);
      await jsm.consumers.add(stream, {
        name,
        filter_subject: filter,
        deliver_policy: DeliverPolicy.All,
        ack_policy: AckPolicy.Explicit,
        inactive_threshold: REPLAY_IDLE_NS,
      });
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
    },
  };
}
