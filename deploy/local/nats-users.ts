/**
 * The suite's NATS identities on one machine (libs/events/src/nats-accounts.ts): one nkey user per service,
 * an `admin` for operators, and one read-only `subscriber-<system>` per outside system (NATS_SUBSCRIBERS, a
 * comma-separated list; `subscriber-example` when unset).
 *
 *   nats-users.ts CONF ENV   create missing users, write the server's `authorization` block to CONF (public
 *                            keys and permissions only) and the seeds to ENV (NATS_NKEY_SEED_<IDENTITY>)
 *
 * The seeds stay in `$DAM_DATA/secrets/nats-users.json` (mode 0600). The config is rewritten on every run, so
 * a change of permissions in the code applies at the next `deploy/local/up` (nats.sh reloads the server).
 */
import { chmodSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import {
  DEFAULT_SUBSCRIBERS,
  generateNatsUsers,
  NATS_IDENTITIES,
  parseSubscribers,
  publicKeyOfSeed,
  renderNatsAuthorization,
  type NatsIdentity,
} from '@dam/events';
import { writePrivate } from './private-file';

const dataDir = process.env.DAM_DATA ?? path.resolve(__dirname, '../../.data');
const secrets = path.join(dataDir, 'secrets');
const storeFile = path.join(secrets, 'nats-users.json');

type Store = Partial<Record<NatsIdentity, string>>;

function main(): void {
  const [conf, env] = process.argv.slice(2);
  if (!conf || !env) throw new Error('usage: nats-users.ts CONF ENV');
  mkdirSync(secrets, { recursive: true, mode: 0o700 });
  chmodSync(secrets, 0o700);
  const store: Store = existsSync(storeFile) ? (JSON.parse(readFileSync(storeFile, 'utf8')) as Store) : {};
  const subscribers = process.env.NATS_SUBSCRIBERS ? parseSubscribers(process.env.NATS_SUBSCRIBERS) : DEFAULT_SUBSCRIBERS;
  const identities: NatsIdentity[] = [...NATS_IDENTITIES, ...subscribers];
  const fresh = generateNatsUsers(subscribers);
  for (const identity of identities) store[identity] ??= fresh.find((u) => u.identity === identity)?.seed;
  // The one `subscriber` all outside systems shared before each got its own (security review F4) is gone.
  delete (store as Record<string, string>).subscriber;
  writePrivate(storeFile, `${JSON.stringify(store, null, 2)}\n`);
  const users = identities.map((identity) => ({ identity, publicKey: publicKeyOfSeed(store[identity] as string) }));
  writePrivate(conf, renderNatsAuthorization(users));
  const lines = identities.map((identity) => `NATS_NKEY_SEED_${identity.toUpperCase().replace(/-/g, '_')}=${store[identity] as string}`);
  writePrivate(env, `${lines.join('\n')}\n`);
}

try {
  main();
} catch (error) {
  console.error(`nats-users: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
}
