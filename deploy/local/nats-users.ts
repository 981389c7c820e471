/**
 * The suite's NATS identities on one machine (libs/events/src/nats-accounts.ts): one nkey user per service,
 * a read-only `subscriber` for outside systems and an `admin` for operators.
 *
 *   nats-users.ts CONF ENV   create missing users, write the server's `authorization` block to CONF (public
 *                            keys and permissions only) and the seeds to ENV (NATS_NKEY_SEED_<IDENTITY>)
 *
 * The seeds stay in `$DAM_DATA/secrets/nats-users.json` (mode 0600). The config is rewritten on every run, so
 * a change of permissions in the code applies at the next `deploy/local/up` (nats.sh reloads the server).
 */
import { chmodSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { generateNatsUsers, NATS_IDENTITIES, publicKeyOfSeed, renderNatsAuthorization, type NatsIdentity } from '@dam/events';
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
  const fresh = generateNatsUsers();
  for (const identity of NATS_IDENTITIES) store[identity] ??= fresh.find((u) => u.identity === identity)?.seed;
  writePrivate(storeFile, `${JSON.stringify(store, null, 2)}\n`);
  const users = NATS_IDENTITIES.map((identity) => ({ identity, publicKey: publicKeyOfSeed(store[identity] as string) }));
  writePrivate(conf, renderNatsAuthorization(users));
  const lines = NATS_IDENTITIES.map((identity) => `NATS_NKEY_SEED_${identity.toUpperCase().replace(/-/g, '_')}=${store[identity] as string}`);
  writePrivate(env, `${lines.join('\n')}\n`);
}

try {
  main();
} catch (error) {
  console.error(`nats-users: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
}
