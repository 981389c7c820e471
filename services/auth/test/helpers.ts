import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import path from 'node:path';
import { encodePrincipal, permissionsFor, ROLE_NAMES, type Principal } from '@dam/auth-tokens';
import { createPool, migrate, type Pool } from '@dam/db';
import { createLogger } from '@dam/logging';
import { createDatabase } from '@dam/testing';
import { createAuthApp } from '../src/app';
import type { LoginLimits } from '../src/domain/login-limiter';
import { bootstrap } from '../src/use-cases/bootstrap.use-case';

export const JWT_SECRET = 'test-jwt-secret-0123456789';
export const INTERNAL_SECRET = 'test-internal-secret-0123456789';
export const ADMIN = { email: 'admin@example.com', password: 'admin-password' };

export interface TestAuth {
  url: string;
  pool: Pool;
  close(): Promise<void>;
}

export async function migratedPool(): Promise<Pool> {
  const pool = createPool(await createDatabase('auth'));
  await migrate(pool, path.join(__dirname, '..', 'src', 'migrations'));
  return pool;
}

/** The real app over a fresh database, bootstrapped, listening on a free port. */
export async function startAuth(limits: Partial<LoginLimits> = {}): Promise<TestAuth> {
  const pool = await migratedPool();
  await bootstrap(pool, ADMIN);
  const app = createAuthApp({
    pool,
    logger: createLogger({ service: 'auth-test', level: 'silent' }),
    jwtSecret: JWT_SECRET,
    internalSecret: INTERNAL_SECRET,
    jwtTtlSeconds: 3600,
    loginLimits: { maxPerEmail: 10, maxPerAddress: 50, windowSeconds: 900, ...limits },
  });
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    pool,
    close: async () => {
      await new Promise((r) => server.close(r));
      await pool.end();
    },
  };
}

/** What the gateway would send for this user. */
export function principalHeaders(userId: number, groupId: number, roleId: number, extra: Partial<Principal> = {}): Record<string, string> {
  return encodePrincipal(
    {
      user_id: userId,
      group_id: groupId,
      role_id: roleId,
      role_name: ROLE_NAMES[roleId] ?? 'UNKNOWN',
      permissions: permissionsFor(roleId),
      via: 'jwt',
      ...extra,
    },
    INTERNAL_SECRET,
  );
}

export async function call(
  url: string,
  method: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read arbitrary JSON
  body: any; headers: Headers }> {
  const res = await fetch(url, {
    method,
    headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
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
