/**
 * The suite's service identities on one machine: one ES256 key pair per service, kept in
 * `$DAM_DATA/secrets/service-keys.json` (mode 0600), and the environment every service gets from it.
 *
 *   service-keys.ts env FILE            create missing keys, write FILE (SERVICE_KEY_<SVC>, SERVICE_TRUSTED_KEYS)
 *   service-keys.ts add SERVICE         rotation step 1: a second key, trusted everywhere, not used yet
 *   service-keys.ts activate SERVICE    rotation step 2: the service signs with its newest key
 *   service-keys.ts retire SERVICE      rotation step 3: drop every key of the service but the active one
 *
 * Restart the services after each step (deploy/local/down && up, or one by one): verifiers first after `add`,
 * the service itself after `activate`. Calls never fail in between, because both keys are trusted throughout.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { generateServiceKey, type ServiceJwk } from '@dam/auth-tokens';
import { writePrivate } from './private-file';

const SERVICES = ['gateway', 'upload', 'link-signing', 'auth', 'metadata', 'search', 'conversion', 'transcode', 'addon', 'webhook'];

interface Store {
  services: Record<string, { active: string; keys: Record<string, ServiceJwk> }>;
}

const dataDir = process.env.DAM_DATA ?? path.resolve(__dirname, '../../.data');
const secrets = path.join(dataDir, 'secrets');
const storeFile = path.join(secrets, 'service-keys.json');

function load(): Store {
  mkdirSync(secrets, { recursive: true, mode: 0o700 });
  chmodSync(secrets, 0o700);
  return existsSync(storeFile) ? (JSON.parse(readFileSync(storeFile, 'utf8')) as Store) : { services: {} };
}

const save = (store: Store): void => writePrivate(storeFile, `${JSON.stringify(store, null, 2)}\n`);

const suffix = (): string => new Date().toISOString().replace(/[-:]/g, '').slice(0, 15).replace('T', 't');

function addKey(store: Store, service: string): string {
  const { privateJwk } = generateServiceKey(service, `${suffix()}${Math.random().toString(36).slice(2, 6)}`);
  const entry = (store.services[service] ??= { active: privateJwk.kid, keys: {} });
  entry.keys[privateJwk.kid] = privateJwk;
  return privateJwk.kid;
}

function publicOf(jwk: ServiceJwk): ServiceJwk {
  const { d: _private, ...pub } = jwk;
  return pub as ServiceJwk;
}

function writeEnv(store: Store, file: string): void {
  const trusted = { keys: Object.values(store.services).flatMap((s) => Object.values(s.keys).map(publicOf)) };
  const lines = Object.entries(store.services).map(([service, s]) => {
    const name = `SERVICE_KEY_${service.replace(/-/g, '_').toUpperCase()}`;
    // JWK JSON has no single quotes: safe inside a single-quoted shell value.
    return `${name}='${JSON.stringify(s.keys[s.active])}'`;
  });
  lines.push(`SERVICE_TRUSTED_KEYS='${JSON.stringify(trusted)}'`);
  writePrivate(file, `${lines.join('\n')}\n`);
}

function main(): void {
  const [command, arg] = process.argv.slice(2);
  const store = load();
  const known = (service: string | undefined): string => {
    if (!service || !store.services[service]) throw new Error(`unknown service "${service ?? ''}": one of ${Object.keys(store.services).join(', ')}`);
    return service;
  };
  switch (command) {
    case 'env': {
      if (!arg) throw new Error('usage: service-keys.ts env FILE');
      for (const service of SERVICES) if (!store.services[service]) addKey(store, service);
      save(store);
      writeEnv(store, arg);
      return;
    }
    case 'add':
      console.log(`added ${addKey(store, known(arg))} (trusted, not active yet)`);
      break;
    case 'activate': {
      const entry = store.services[known(arg)];
      if (!entry) return;
      entry.active = Object.keys(entry.keys).sort().at(-1) ?? entry.active;
      console.log(`${arg} now signs with ${entry.active}`);
      break;
    }
    case 'retire': {
      const entry = store.services[known(arg)];
      if (!entry) return;
      entry.keys = { [entry.active]: entry.keys[entry.active] as ServiceJwk };
      console.log(`${arg} keeps only ${entry.active}`);
      break;
    }
    default:
      throw new Error('usage: service-keys.ts env FILE | add SERVICE | activate SERVICE | retire SERVICE');
  }
  save(store);
}

try {
  main();
} catch (error) {
  console.error(`service-keys: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
}
