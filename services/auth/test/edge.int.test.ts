import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { createAuthenticator, principalOf, signJwt } from '@dam/auth-tokens';
import { createHttpApp, finishApp } from '@dam/http';
import { createLogger } from '@dam/logging';
import { JWT_SECRET, call, identities, principalHeaders, startAuth, type TestAuth } from './harness';

/**
 * What the edges (gateway, upload) do with a JWT, against the real auth: the same authenticator, signing its
 * status lookups as the gateway, with no status cache so every change shows at once.
 */
describe('JWTs at the edges: revoked by a new password or disabling, acting with the current role', () => {
  let auth: TestAuth;
  let edge: { server: Server; url: string };

  beforeAll(async () => {
    auth = await startAuth();
    const logger = createLogger({ service: 'edge-test', level: 'silent' });
    const app = createHttpApp({ logger });
    app.use(createAuthenticator({ jwtSecret: JWT_SECRET, authUrl: auth.url, signer: identities.signer('gateway'), userStatusTtlMs: 0 }));
    app.get('/who', (_req, res) => {
      res.json(principalOf(res));
    });
    const finished = finishApp(app, logger);
    edge = await new Promise((resolve) => {
      const server = finished.listen(0, '127.0.0.1', () => resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }));
    });
  });
  afterAll(async () => {
    await new Promise((r) => edge.server.close(r));
    await auth.close();
  });

  const admin = () => principalHeaders(1, 1, 1);
  const who = async (jwt: string) => {
    const res = await fetch(`${edge.url}/who`, { headers: { authorization: `Bearer ${jwt}` } });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> & { error?: { code: string } } };
  };
  const login = async (email: string, password: string): Promise<string> => {
    const res = await call(`${auth.url}/api/v1/login`, 'POST', { email, password });
    expect(res.status).toBe(200);
    return res.body.jwt as string;
  };
  const patchUser = async (id: number, body: unknown) => expect((await call(`${auth.url}/api/v1/users/${id}`, 'PATCH', body, admin())).status).toBe(200);

  it('a password change ends the tokens signed before it; the new one works', async () => {
    const created = await call(`${auth.url}/api/v1/users`, 'POST', { email: 'pw@example.com', password: 'password-1', role_id: 3 }, admin());
    const id = created.body.user_id as number;
    const before = await login('pw@example.com', 'password-1');
    expect((await who(before)).status).toBe(200);
    await patchUser(id, { password: 'password-2' });
    const revoked = await who(before);
    expect(revoked).toEqual({ status: 401, body: { error: { code: 'TOKEN_REVOKED', message: expect.any(String) } } });
    expect((await who(await login('pw@example.com', 'password-2'))).status).toBe(200);
  });

  it('disabling ends the tokens for good: enabling the user again does not bring them back', async () => {
    const created = await call(`${auth.url}/api/v1/users`, 'POST', { email: 'off@example.com', password: 'password-1', role_id: 3 }, admin());
    const id = created.body.user_id as number;
    const before = await login('off@example.com', 'password-1');
    await patchUser(id, { disabled: true });
    expect((await who(before)).body.error?.code).toBe('ACCOUNT_DISABLED');
    await patchUser(id, { disabled: false });
    expect((await who(before)).body.error?.code).toBe('TOKEN_REVOKED');
    expect((await who(await login('off@example.com', 'password-1'))).status).toBe(200);
  });

  it('a token acts with the role the user has now, not the one it was signed with', async () => {
    const created = await call(`${auth.url}/api/v1/users`, 'POST', { email: 'role@example.com', password: 'password-1', role_id: 1 }, admin());
    const id = created.body.user_id as number;
    const jwt = await login('role@example.com', 'password-1');
    expect((await who(jwt)).body).toMatchObject({ role_id: 1, role_name: 'ADMIN' });
    await patchUser(id, { role_id: 4 });
    const demoted = await who(jwt);
    expect(demoted.status).toBe(200);
    expect(demoted.body).toMatchObject({ user_id: id, role_id: 4, role_name: 'CREATOR', permissions: ['CREATE_ASSET', 'READ_OWN_ASSET'] });
  });

  it('a token without the epoch claim counts as epoch 0', async () => {
    const created = await call(`${auth.url}/api/v1/users`, 'POST', { email: 'old@example.com', password: 'password-1', role_id: 3 }, admin());
    const id = created.body.user_id as number;
    const legacy = signJwt({ sub: id, gid: 1, role: 3 }, JWT_SECRET, 60).token;
    expect((await who(legacy)).status).toBe(200);
    await patchUser(id, { password: 'password-2' });
    expect((await who(legacy)).body.error?.code).toBe('TOKEN_REVOKED');
  });
});
