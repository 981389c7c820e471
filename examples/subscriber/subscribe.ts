/**
 * An outside system following the suite's asset events (docs/asyncapi.yaml): connects as the read-only
 * `subscriber` identity, reads ASSET_EVENTS with a consumer of its own, drops repeated events (at-least-once
 * delivery: the same `id` may come twice) and events older than what it already applied for the asset (`version`),
 * and prints one JSON line per event it applies. Stops on SIGINT/SIGTERM.
 *
 *   NATS_URL=nats://127.0.0.1:4222 NATS_NKEY_SEED=<the subscriber seed> pnpm --filter @dam/example-subscriber start
 *
 * Locally the seed is NATS_NKEY_SEED_SUBSCRIBER in .data/secrets/nats-users.env. A real subscriber would keep its
 * place with a durable consumer (`jsm.consumers.add(...)` with a `durable_name`) instead of replaying from the start,
 * and keep the applied versions in its own store.
 */
import { DeliverPolicy, jetstream } from '@nats-io/jetstream';
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
  if (!seed) throw new Error('NATS_NKEY_SEED (the subscriber identity\'s seed) is required');
  const nc = await connect({
    servers: (process.env.NATS_URL ?? 'nats://127.0.0.1:4222').split(','),
    authenticator: nkeyAuthenticator(new TextEncoder().encode(seed)),
    // The subscriber identity may read replies only under its own inbox prefix.
    inboxPrefix: '_INBOX_subscriber',
    maxReconnectAttempts: -1,
  });
  // An ordered consumer over the whole stream (DeliverPolicy.New: only what happens from now on).
  const consumer = await jetstream(nc).consumers.get('ASSET_EVENTS', {
    deliver_policy: process.env.FROM === 'new' ? DeliverPolicy.New : DeliverPolicy.All,
  });
  const messages = await consumer.consume();
  const stop = () => void messages.close();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);

  const seenIds = new Set<string>();
  const applied = new Map<string, number>(); // asset id → highest version applied
  console.error('following ASSET_EVENTS');
  for await (const m of messages) {
    const event = m.json<AssetEvent>();
    if (seenIds.has(event.id)) continue; // delivered again: already handled
    seenIds.add(event.id);
    if ((applied.get(event.asset_id) ?? 0) >= event.version) continue; // older than what we know: ignore
    applied.set(event.asset_id, event.version);
    console.log(JSON.stringify({ subject: m.subject, type: event.type, asset_id: event.asset_id, version: event.version, status: event.data.status ?? null }));
  }
  await nc.close();
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : String(error));
  process.exit(1);
});
