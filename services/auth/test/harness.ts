import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { createServiceVerifier, parseTrustedKeys, permissionsFor, ROLE_NAMES, type Principal } from '@dam/auth-tokens';
import { createPool, type Pool } from '@dam/db';
import { createLogger } from '@dam/logging';
import { createDatabase, serviceIdentities } from '@dam/testing';
import { pgAuthStore } from '../src/adapters/pg-store';
import { createAuthApp } from '../src/app';
import type { LoginLimits } from '../src/domain/login-limiter';
import type { AssetDirectory } from '../src/domain/ports';
import { migrateAuth } from '../src/migrations';
import { bootstrap } from '../src/use-cases/bootstrap.use-case';

export const JWT_SECRET = 'test-jwt-secret-0123456789';
/** Key pairs of the suite's services: auth trusts them all, tests sign their calls as one of them. */
export const identities = serviceIdentities();
export const ADMIN = { email: 'admin@example.com', password: 'admin-password' };

export interface TestAuth {
  url: string;
  /** Its database, for another replica on the same one (StartOptions.database). */
  database: string;
  pool: Pool;
  close(): Promise<void>;
}

/** A pool on a fresh database (or on `database`), migrated. */
export async function migratedPool(database?: string): Promise<Pool> {
  const pool = createPool(database ?? (await createDatabase('auth')));
  await migrateAuth(pool);
  return pool;
}

/** The assets each group has, as the stand-in for metadata reports them. */
export const knownAssets = new Map<number, Set<string>>();

export interface StartOptions {
  /** Receives auth's settings notices (NATS in the service). */
  announceSettingsChange?: (groupId: number) => Promise<void>;
  /** The login limiter's clock. */
  now?: () => number;
  /** metadata's view of assets; by default the `knownAssets` table. */
  assets?: AssetDirectory;
  /** Another replica: this database (its URL) instead of a fresh one. */
  database?: string;
}

/** The real app over a fresh database (or opts.database), bootstrapped, listening on a free port. */
export async function startAuth(limits: Partial<LoginLimits> = {}, opts: StartOptions = {}): Promise<TestAuth> {
  const database = opts.database ?? (await createDatabase('auth'));
  const pool = await migratedPool(database);
  await bootstrap(pgAuthStore(pool), ADMIN);
  const app = createAuthApp({
    pool,
    logger: createLogger({ service: 'auth-test', level: 'silent' }),
    jwtSecret: JWT_SECRET,
    verifier: createServiceVerifier({ service: 'auth', trusted: parseTrustedKeys(identities.trustedKeys()) }),
    jwtTtlSeconds: 3600,
    loginLimits: { maxPerEmail: 10, maxPerAddress: 50, windowSeconds: 900, ...limits },
    ...(opts.now ? { now: opts.now } : {}),
    // metadata's answer, as a table: group id → its asset ids (the real client: settings.int.test.ts).
    assets: opts.assets ?? { existing: async (p, ids) => ids.filter((id) => knownAssets.get(p.group_id)?.has(id)) },
    webhookAllowHosts: ['127.0.0.1'],
    ...(opts.announceSettingsChange ? { announceSettingsChange: opts.announceSettingsChange } : {}),
  });
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    database,
    pool,
    close: async () => {
      await new Promise((r) => server.close(r));
      await pool.end();
    },
  };
}

const AS = Symbol('signed as');

/** Who a test call comes from: a service of the suite, maybe for a user, maybe for a client address. */
export interface As {
  caller: string;
  principal?: Principal;
  clientAddress?: string;
}

/** Request headers plus who signs the call (absent: the gateway with no user; null: nobody). */
export type CallHeaders = Record<string, string> & { [AS]?: As | null };

/** Signed as `caller`, with extra plain headers. */
export const asService = (as: As, headers: Record<string, string> = {}): CallHeaders => ({ ...headers, [AS]: as });

/** No service token at all: what a pod of the cluster that is not one of ours would send. */
export const unsigned = (headers: Record<string, string> = {}): CallHeaders => ({ ...headers, [AS]: null });

/** What the gateway sends for this user. */
export function principalHeaders(userId: number, groupId: number, roleId: number, extra: Partial<Principal> = {}): CallHeaders {
  return asService({
    caller: 'gateway',
    principal: {
      user_id: userId,
      group_id: groupId,
      role_id: roleId,
      role_name: ROLE_NAMES[roleId] ?? 'UNKNOWN',
      permissions: permissionsFor(roleId),
      via: 'jwt',
      ...extra,
    },
  });
}

/** JSON text as a service's parser reads it back (JSON.stringify of the parsed value); other text as it is. */
function canonicalJson(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text));
  } catch {
    return text;
  }
}

export async function call(
  url: string,
  method: string,
  body?: unknown,
  headers: CallHeaders = {},
): Promise<{
  status: number; // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read arbitrary JSON
  body: any;
  headers: Headers;
}> {
  const as = headers[AS] === undefined ? { caller: 'gateway' } : headers[AS];
  const u = new URL(url);
  const sentText = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
  // Object.entries leaves the symbol out: only real headers go on the wire.
  const plain: Record<string, string> = Object.fromEntries(Object.entries(headers));
  if (as) {
    const { caller, ...target } = as;
    // Bound to the body as auth's parser reads it back (security review I6); text that is no JSON is refused before.
    const sent = sentText === undefined ? {} : { body: canonicalJson(sentText) };
    Object.assign(plain, identities.headers(caller, { audience: 'auth', method, path: u.pathname + u.search, ...sent, ...target }));
  }
  const res = await fetch(url, {
    method,
    headers: body === undefined ? plain : { 'content-type': 'application/json', ...plain },
    body: sentText,
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    // not JSON: keep the text for the assertion message
  }
  return { status: res.status, body: parsed, headers: res.headers };
}
