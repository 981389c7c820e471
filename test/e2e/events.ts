import { jetstream, type JsMsg } from '@nats-io/jetstream';
import { connect, nkeyAuthenticator, type NatsConnection } from '@nats-io/transport-node';
import { natsServers } from '@dam/events';

export interface SeenEvent {
  subject: string;
  type: string;
  asset_id: string;
  status: string | undefined;
  /** The asset's version after the change (last-writer-wins for read models). */
  version: number;
  seq: number;
  /** The whole envelope as published. */
  envelope: unknown;
}

/**
 * Reads the public `ASSET_EVENTS` stream as it is published: an ordered consumer over the whole stream from the first
 * message, collecting envelopes as they arrive. Ordered consumers get names made at run time, which only the `admin`
 * identity may use (an outside system's user acts on one consumer named as itself: example-subscriber.e2e.test.ts),
 * so `seed` is the admin's. `natsUrl` may list several servers (a cluster).
 */
export async function watchAssetEvents(natsUrl: string, seed: string): Promise<{ seen: SeenEvent[]; close(): Promise<void> }> {
  const nc: NatsConnection = await connect({
    servers: natsServers(natsUrl),
    authenticator: nkeyAuthenticator(new TextEncoder().encode(seed)),
  });
  const js = jetstream(nc);
  const consumer = await js.consumers.get('ASSET_EVENTS');
  const seen: SeenEvent[] = [];
  const messages = await consumer.consume();
  const done = (async () => {
    for await (const m of messages as AsyncIterable<JsMsg>) {
      const env = m.json<{ type: string; asset_id: string; version: number; data: { status?: string } }>();
      seen.push({ subject: m.subject, type: env.type, asset_id: env.asset_id, status: env.data.status, version: env.version, seq: m.seq, envelope: env });
    }
  })();
  return {
    seen,
    async close() {
      await messages.close();
      await done;
      await nc.close();
    },
  };
}
