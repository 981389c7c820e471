import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import express, { type ErrorRequestHandler } from 'express';
import { isAppError } from '@dam/errors';
import {
  createAuthenticator,
  createServiceSigner,
  createServiceVerifier,
  generateServiceKey,
  parseSigningKey,
  parseTrustedKeys,
  principalOf,
  signJwt,
  type AuthenticatorOptions,
  type Principal,
} from '../src';

const SECRET = 'jwt-secret-0123456789';
const gatewayKey = generateServiceKey('gateway');
const signer = createServiceSigner(parseSigningKey(JSON.stringify(gatewayKey.privateJwk)));
// The stand-in auth checks the edge's token as the real one does.
const verifier = createServiceVerifier({ service: 'auth', trusted: parseTrustedKeys(JSON.stringify({ keys: [gatewayKey.publicJwk] })) });
const authenticator = (opts: Omit<AuthenticatorOptions, 'signer'>) => createAuthenticator({ ...opts, signer });

// Tiny error mapper so these tests need no @dam/http: kind → status as the contract says.
const STATUS: Record<string, number> = { UNAUTHENTICATED: 401, FORBIDDEN: 403, UNAVAILABLE: 503 };
const errors: ErrorRequestHandler = (err, _req, res, _next) => {
  const status = isAppError(err) ? (STATUS[err.kind] ?? 400) : 500;
  res.status(status).json({ error: { code: isAppError(err) ? err.code : 'INTERNAL_ERROR' } });
};

const listen = (app: express.Express): Promise<{ server: Server; url: string }> =>
  new Promise((resolve) => {
    const server = app.listen(0, '127.0.0.1', () => resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }));
  });

const keyPrincipal: Principal = {
  user_id: 9,
  group_id: 4,
  role_id: 3,
  role_name: 'USER',
  permissions: ['READ_ASSET'],
  via: 'api_key',
  key_id: 'k',
  key_role: 'USER',
};

// What the stand-in auth answers for `<group>:<user>`; absent → 404 (the user is gone).
const userStatus: Record<string, { active: boolean; role_id: number; token_epoch?: number }> = {};
let statusCalls = 0;

describe('createAuthenticator', () => {
  let auth: { server: Server; url: string };
  let edge: { server: Server; url: string };
  let authUrl: string;

  beforeAll(async () => {
    const authApp = express();
    authApp.use(express.json());
    authApp.use(verifier.guard({ callers: ['gateway'], principal: 'none' }));
    authApp.get('/internal/v1/groups/:gid/users/:uid/status', (req, res) => {
      statusCalls += 1;
      const status = userStatus[`${req.params.gid}:${req.params.uid}`];
      if (status) res.json(status);
      else res.status(404).json({ error: { code: 'USER_NOT_FOUND' } });
    });
    authApp.post('/internal/v1/authenticate', (req, res) => {
      if (req.body.api_key === 'dam_good') res.json(keyPrincipal);
      else if (req.body.api_key === 'dam_boom') res.status(500).json({});
      else res.status(401).json({ error: { code: 'UNAUTHENTICATED' } });
    });
    authApp.use(errors);
    auth = await listen(authApp);
    authUrl = auth.url;
    const edgeApp = express();
    // The auth URL is read per request so one test can point it at a dead port.
    edgeApp.use((req, res, next) => authenticator({ jwtSecret: SECRET, authUrl, timeoutMs: 2000 })(req, res, next));
    edgeApp.get('/who', (_req, res) => {
      res.json(principalOf(res));
    });
    edgeApp.use(errors);
    edge = await listen(edgeApp);
  });

  afterAll(async () => {
    await new Promise((r) => auth.server.close(r));
    await new Promise((r) => edge.server.close(r));
  });

  it('missing credentials → 401', async () => {
    const res = await fetch(`${edge.url}/who`);
    expect(res.status).toBe(401);
  });

  beforeEach(() => {
    for (const k of Object.keys(userStatus)) delete userStatus[k];
    userStatus['3:2'] = { active: true, role_id: 4 };
    statusCalls = 0;
  });

  it('a valid JWT gives the role permissions', async () => {
    const { token } = signJwt({ sub: 2, gid: 3, role: 4 }, SECRET, 60);
    const res = await fetch(`${edge.url}/who`, { headers: { authorization: `Bearer ${token}` } });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      user_id: 2,
      group_id: 3,
      role_id: 4,
      role_name: 'CREATOR',
      permissions: ['CREATE_ASSET', 'READ_OWN_ASSET'],
      via: 'jwt',
    });
  });

  it("a JWT of a disabled user → 403, of a deleted user → 401, of a demoted user → the current role's rights", async () => {
    const who = (t: string) => fetch(`${edge.url}/who`, { headers: { authorization: `Bearer ${t}` } });
    const { token } = signJwt({ sub: 2, gid: 3, role: 1 }, SECRET, 60);
    userStatus['3:2'] = { active: true, role_id: 4 };
    const demoted = await who(token);
    expect(demoted.status).toBe(200);
    expect(await demoted.json()).toMatchObject({ role_id: 4, role_name: 'CREATOR', permissions: ['CREATE_ASSET', 'READ_OWN_ASSET'] });
    userStatus['3:2'] = { active: false, role_id: 1 };
    const disabled = await who(token);
    expect(disabled.status).toBe(403);
    expect(await disabled.json()).toEqual({ error: { code: 'ACCOUNT_DISABLED' } });
    delete userStatus['3:2'];
    expect((await who(token)).status).toBe(401);
  });

  it('reuses a user status for its TTL, and keeps JWTs working from their claims while auth is down', async () => {
    const app = express();
    let url = authUrl;
    const authenticate = authenticator({ jwtSecret: SECRET, authUrl: url, userStatusTtlMs: 60_000 });
    const down = authenticator({ jwtSecret: SECRET, authUrl: 'http://127.0.0.1:9', timeoutMs: 500 });
    app.get(
      '/who',
      (req, res, next) => (url === 'down' ? down : authenticate)(req, res, next),
      (_req, res) => {
        res.json(principalOf(res));
      },
    );
    app.use(errors);
    const s = await listen(app);
    try {
      const { token } = signJwt({ sub: 2, gid: 3, role: 4 }, SECRET, 60);
      const call = () => fetch(`${s.url}/who`, { headers: { authorization: `Bearer ${token}` } });
      expect((await call()).status).toBe(200);
      userStatus['3:2'] = { active: false, role_id: 4 };
      expect((await call()).status).toBe(200); // cached for a minute
      expect(statusCalls).toBe(1);
      url = 'down';
      const res = await call();
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ user_id: 2, role_id: 4, via: 'jwt' });
    } finally {
      await new Promise((r) => s.server.close(r));
    }
  });

  it("refuses a JWT signed before the user's current token epoch (password changed, account disabled)", async () => {
    const who = (t: string) => fetch(`${edge.url}/who`, { headers: { authorization: `Bearer ${t}` } });
    userStatus['3:2'] = { active: true, role_id: 4, token_epoch: 2 };
    const stale = await who(signJwt({ sub: 2, gid: 3, role: 4, ep: 1 }, SECRET, 60).token);
    expect(stale.status).toBe(401);
    expect(await stale.json()).toEqual({ error: { code: 'TOKEN_REVOKED' } });
    expect((await who(signJwt({ sub: 2, gid: 3, role: 4 }, SECRET, 60).token)).status).toBe(401); // no ep = 0
    expect((await who(signJwt({ sub: 2, gid: 3, role: 4, ep: 2 }, SECRET, 60).token)).status).toBe(200);
  });

  it('asks auth once for many concurrent requests of one user', async () => {
    // A slow stand-in auth: every request below arrives while the first lookup is still running.
    let lookups = 0;
    const slowAuth = express();
    slowAuth.use(verifier.guard({ callers: ['gateway'], principal: 'none' }));
    slowAuth.get('/internal/v1/groups/:gid/users/:uid/status', (_req, res) => {
      lookups += 1;
      setTimeout(() => res.json({ active: true, role_id: 4, token_epoch: 0 }), 500);
    });
    const slow = await listen(slowAuth);
    const app = express();
    app.get('/who', authenticator({ jwtSecret: SECRET, authUrl: slow.url, userStatusTtlMs: 0 }), (_req, res) => {
      res.json(principalOf(res));
    });
    app.use(errors);
    const s = await listen(app);
    try {
      const { token } = signJwt({ sub: 2, gid: 3, role: 4 }, SECRET, 60);
      const statuses = await Promise.all(
        Array.from({ length: 20 }, () => fetch(`${s.url}/who`, { headers: { authorization: `Bearer ${token}` } }).then((r) => r.status)),
      );
      expect(new Set(statuses)).toEqual(new Set([200]));
      expect(lookups).toBe(1);
    } finally {
      await new Promise((r) => s.server.close(r));
      await new Promise((r) => slow.server.close(r));
    }
  });

  it('a bad JWT or a non-Bearer Authorization → 401', async () => {
    expect((await fetch(`${edge.url}/who`, { headers: { authorization: 'Bearer nope' } })).status).toBe(401);
    expect((await fetch(`${edge.url}/who`, { headers: { authorization: 'Basic abc' } })).status).toBe(401);
  });

  it('API keys are checked by auth', async () => {
    const ok = await fetch(`${edge.url}/who`, { headers: { 'x-service-api-key': 'dam_good' } });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual(keyPrincipal);
    expect((await fetch(`${edge.url}/who`, { headers: { 'x-service-api-key': 'dam_bad' } })).status).toBe(401);
    expect((await fetch(`${edge.url}/who`, { headers: { 'x-service-api-key': 'dam_boom' } })).status).toBe(503);
  });

  it('auth unreachable → 503, not 500', async () => {
    const dead = await listen(express());
    const deadUrl = dead.url;
    await new Promise((r) => dead.server.close(r));
    authUrl = deadUrl;
    try {
      const res = await fetch(`${edge.url}/who`, { headers: { 'x-service-api-key': 'dam_good' } });
      expect(res.status).toBe(503);
      expect(await res.json()).toEqual({ error: { code: 'UNAVAILABLE' } });
    } finally {
      authUrl = auth.url;
    }
  });
});
