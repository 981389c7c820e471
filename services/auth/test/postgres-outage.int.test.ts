/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are untyped JSON; the assertions check them */
import { scaled, serviceIdentities, startPostgresCluster, startServiceProcess, waitFor, type PostgresCluster, type ServiceProcess } from '@dam/testing';
import { ADMIN } from './harness';

/** Issue 14: with its PostgreSQL down, auth answers 503 with the contract's body (never a 500), and recovers alone. */
const identities = serviceIdentities();
let pg: PostgresCluster;
let auth: ServiceProcess;

beforeAll(async () => {
  pg = await startPostgresCluster();
  auth = await startServiceProcess('auth', {
    ...identities.env('auth'),
    DATABASE_URL: pg.url,
    JWT_SECRET: 'jwt-secret-for-the-outage-test-0123456789',
    ADMIN_EMAIL: ADMIN.email,
    ADMIN_PASSWORD: ADMIN.password,
    LOG_LEVEL: 'warn',
  });
}, scaled(60_000));
afterAll(async () => {
  await auth?.stop();
  await pg?.stop();
});

const login = async () => {
  // As the gateway forwards it: with its one-request service token.
  const body = JSON.stringify(ADMIN);
  const signed = identities.headers('gateway', { audience: 'auth', method: 'POST', path: '/api/v1/login', body });
  const res = await fetch(`${auth.url}/api/v1/login`, { method: 'POST', headers: { ...signed, 'content-type': 'application/json' }, body });
  return { status: res.status, retryAfter: res.headers.get('retry-after'), body: (await res.json()) as any };
};

it('answers login with 503 UNAVAILABLE while PostgreSQL is down, and 200 again once it is back', async () => {
  const first = await login();
  expect(first).toMatchObject({ status: 200 });
  await pg.pause();
  const down = await login();
  expect(down).toMatchObject({ status: 503, retryAfter: '5', body: { error: { code: 'UNAVAILABLE', message: expect.any(String) } } });
  const ready = await fetch(`${auth.url}/readyz`);
  expect(ready.status).toBe(503);
  await pg.resume();
  await waitFor(async () => (await login()).status === 200, { timeoutMs: 10_000, description: 'login works again' });
  expect(auth.logs().some((l) => l.includes('unexpected error'))).toBe(false);
});
