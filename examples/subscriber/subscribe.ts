/**
 * An outside system following the suite's asset events (docs/asyncapi.yaml): connects as its own read-only user
 * (`subscriber-<system>`), reads ASSET_EVENTS through the one durable consumer that user may act on, named as the
 * user, drops repeated events (at-least-once delivery: the same `id` may come twice) and events older than what it
 * already applied for the asset (`version`), acknowledges each, and prints one JSON line per event it applies. Stops
 * on SIGINT/SIGTERM; run again, it goes on where it stopped (the consumer keeps its place on the server).
 *
 *   NATS_URL=nats://127.0.0.1:4222 NATS_SUBSCRIBER=subscriber-example NATS_NKEY_SEED=<its seed> \
 *     pnpm --filter @dam/example-subscriber start
 *
 * Locally the seed is NATS_NKEY_SEED_SUBSCRIBER_EXAMPLE in .data/secrets/nats-users.env (other systems: list them
 * in NATS_SUBSCRIBERS before deploy/local/up). FROM=new starts a new consumer at the next event instead of the
 * stream's first. A real subscriber keeps the applied versions in its own store.
 */
import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, nkeyAuthenticator } from '@nats-io/transport-node';

interface AssetEvent {
  id: string;
  type: string;
  time: string;
  group_id: string;
  asset_id: string;
  version: number;
  data: { status?: string; name?: string };
}

async function main(): Promise<void> {
  const seed = process.env.NATS_NKEY_SEED;
  if (!seed) throw new Error("NATS_NKEY_SEED (the subscriber identity's seed) is required");
  const identity = process.env.NATS_SUBSCRIBER ?? 'subscriber-example';
  const nc = await connect({
    servers: (process.env.NATS_URL ?? 'nats://127.0.0.1:4222').split(','),
    authenticator: nkeyAuthenticator(new TextEncoder().encode(seed)),
    // Each identity may read replies only under its own inbox prefix.
    inboxPrefix: `_INBOX_${identity}`,
    maxReconnectAttempts: -1,
  });
  // The durable consumer named as the identity (the only name it may use): made at the first run, reused after.
  const jsm = await jetstreamManager(nc);
  await jsm.consumers.add('ASSET_EVENTS', {
    durable_name: identity,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: process.env.FROM === 'new' ? DeliverPolicy.New : DeliverPolicy.All,
  });
  const messages = await (await jetstream(nc).consumers.get('ASSET_EVENTS', identity)).consume();
  const stop = () => void messages.close();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);

  const seenIds = new Set<string>();
  const applied = new Map<string, number>(); // asset id → highest version applied
  console.error('following ASSET_EVENTS');
  for await (const m of messages) {
    const event = m.json<AssetEvent>();
    const repeated = seenIds.has(event.id); // delivered again: already handled
    seenIds.add(event.id);
    const older = (applied.get(event.asset_id) ?? 0) >= event.version; // older than what we know: ignore
    if (!repeated && !older) {
      applied.set(event.asset_id, event.version);
      console.log(
        JSON.stringify({ subject: m.subject, type: event.type, asset_id: event.asset_id, version: event.version, status: event.data.status ?? null }),
      );
    }
    m.ack();
  }
  await nc.close();
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : String(error));
  process.exit(1);
});
