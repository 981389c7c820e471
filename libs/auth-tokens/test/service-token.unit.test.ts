import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import express, { type ErrorRequestHandler } from 'express';
import jwt from 'jsonwebtoken';
import { z } from 'zod';
import { isAppError } from '@dam/errors';
import {
  SERVICE_TOKEN_HEADER,
  createServiceSigner,
  createServiceVerifier,
  generateServiceKey,
  parseSigningKey,
  parseTrustedKeys,
  principalOf,
  serviceCallOf,
  serviceKeyEnv,
  trustedKeysEnv,
  type Principal,
  type ServiceJwk,
} from '../src';

const principal: Principal = {
  user_id: 9,
  group_id: 4,
  role_id: 3,
  role_name: 'USER',
  permissions: ['READ_ASSET'],
  via: 'jwt',
};

const gateway = generateServiceKey('gateway', 'k1');
const gatewayNext = generateServiceKey('gateway', 'k2');
const conversion = generateServiceKey('conversion', 'k1');
const signerOf = (k: { privateJwk: ServiceJwk }) => createServiceSigner(parseSigningKey(JSON.stringify(k.privateJwk)));
const trust = (...keys: Array<{ publicJwk: ServiceJwk }>) => parseTrustedKeys(JSON.stringify({ keys: keys.map((k) => k.publicJwk) }));

const call = { audience: 'metadata', method: 'GET', path: '/api/v1/assets/a/data?x=1', principal };

describe('service tokens', () => {
  it('carry the caller (from its key), the principal and the client address', () => {
    const verifier = createServiceVerifier({ service: 'metadata', trusted: trust(gateway, conversion) });
    const token = signerOf(gateway).sign({ ...call, clientAddress: '203.0.113.7' });
    expect(verifier.verify(token, 'GET', call.path)).toEqual({ caller: 'gateway', principal, clientAddress: '203.0.113.7' });
  });

  it('are refused when missing, for another audience, method or path, or from an unknown key', () => {
    const verifier = createServiceVerifier({ service: 'metadata', trusted: trust(gateway) });
    const g = signerOf(gateway);
    const code = (fn: () => unknown) => {
      try {
        fn();
      } catch (e) {
        return isAppError(e) ? `${e.kind}:${e.code}` : 'other';
      }
      return 'accepted';
    };
    expect(code(() => verifier.verify(undefined, 'GET', call.path))).toBe('UNAUTHENTICATED:SERVICE_TOKEN_REQUIRED');
    expect(code(() => verifier.verify(g.sign({ ...call, audience: 'auth' }), 'GET', call.path))).toBe('UNAUTHENTICATED:INVALID_SERVICE_TOKEN');
    expect(code(() => verifier.verify(g.sign(call), 'POST', call.path))).toBe('UNAUTHENTICATED:INVALID_SERVICE_TOKEN');
    expect(code(() => verifier.verify(g.sign(call), 'GET', '/api/v1/assets/b/data?x=1'))).toBe('UNAUTHENTICATED:INVALID_SERVICE_TOKEN');
    expect(code(() => verifier.verify(signerOf(conversion).sign(call), 'GET', call.path))).toBe('UNAUTHENTICATED:INVALID_SERVICE_TOKEN');
    expect(code(() => verifier.verify('not.a.token', 'GET', call.path))).toBe('UNAUTHENTICATED:INVALID_SERVICE_TOKEN');
  });

  it('are single-use: a replayed token is refused', () => {
    const verifier = createServiceVerifier({ service: 'metadata', trusted: trust(gateway) });
    const token = signerOf(gateway).sign(call);
    expect(verifier.verify(token, 'GET', call.path).caller).toBe('gateway');
    expect(() => verifier.verify(token, 'GET', call.path)).toThrow(expect.objectContaining({ code: 'INVALID_SERVICE_TOKEN' }));
  });

  it('expire after about a minute, and a signer cannot mint longer-lived ones', () => {
    let now = Date.now();
    const verifier = createServiceVerifier({ service: 'metadata', trusted: trust(gateway), now: () => now });
    const token = signerOf(gateway).sign(call);
    now += 70_000;
    expect(() => verifier.verify(token, 'GET', call.path)).toThrow(expect.objectContaining({ code: 'INVALID_SERVICE_TOKEN' }));
    now = Date.now();
    // Signed with the real key but for a day: refused whatever the token says.
    const key = parseSigningKey(JSON.stringify(gateway.privateJwk));
    const long = jwt.sign({ htm: 'GET', htu: call.path, jti: 'j-long' }, key.privateKey, {
      algorithm: 'ES256',
      header: { alg: 'ES256', kid: key.kid, typ: 'dam-call+jwt' },
      issuer: 'gateway',
      audience: 'metadata',
      expiresIn: 86_400,
    });
    expect(() => verifier.verify(long, 'GET', call.path)).toThrow(expect.objectContaining({ code: 'INVALID_SERVICE_TOKEN' }));
  });

  it('a key cannot speak for another service, whatever its token claims', () => {
    const verifier = createServiceVerifier({ service: 'metadata', trusted: trust(gateway, conversion) });
    const key = parseSigningKey(JSON.stringify(conversion.privateJwk));
    const forged = jwt.sign({ htm: 'GET', htu: call.path, jti: 'j-forged', prn: principal }, key.privateKey, {
      algorithm: 'ES256',
      header: { alg: 'ES256', kid: key.kid, typ: 'dam-call+jwt' },
      issuer: 'gateway',
      audience: 'metadata',
      expiresIn: 60,
    });
    expect(() => verifier.verify(forged, 'GET', call.path)).toThrow(expect.objectContaining({ code: 'INVALID_SERVICE_TOKEN' }));
  });

  it('rotate without downtime: both keys work while both are trusted, the old one stops once dropped', () => {
    const during = createServiceVerifier({ service: 'metadata', trusted: trust(gateway, gatewayNext) });
    expect(during.verify(signerOf(gateway).sign(call), 'GET', call.path).caller).toBe('gateway');
    expect(during.verify(signerOf(gatewayNext).sign(call), 'GET', call.path).caller).toBe('gateway');
    const after = createServiceVerifier({ service: 'metadata', trusted: trust(gatewayNext) });
    expect(after.verify(signerOf(gatewayNext).sign(call), 'GET', call.path).caller).toBe('gateway');
    expect(() => after.verify(signerOf(gateway).sign(call), 'GET', call.path)).toThrow(expect.objectContaining({ code: 'INVALID_SERVICE_TOKEN' }));
  });
});

describe('service guard (express)', () => {
  const STATUS: Record<string, number> = { UNAUTHENTICATED: 401, FORBIDDEN: 403 };
  const errors: ErrorRequestHandler = (err, _req, res, _next) => {
    res.status(isAppError(err) ? (STATUS[err.kind] ?? 400) : 500).json({ error: { code: isAppError(err) ? err.code : 'INTERNAL_ERROR' } });
  };
  let server: Server;
  let url: string;

  beforeAll(async () => {
    const verifier = createServiceVerifier({ service: 'metadata', trusted: trust(gateway, conversion) });
    const app = express();
    app.use('/api', verifier.guard({ callers: ['gateway'], principal: 'required' }));
    app.all('/internal/settings', verifier.guard({ callers: ['conversion'], principal: 'none' }));
    app.use(['/api', '/internal'], verifier.onlyGuarded);
    app.get('/api/who', (_req, res) => {
      res.json({ principal: principalOf(res), caller: serviceCallOf(res).caller });
    });
    app.get('/internal/settings', (_req, res) => {
      res.json({ caller: serviceCallOf(res).caller });
    });
    app.get('/internal/unguarded', (_req, res) => {
      res.json({ leaked: true });
    });
    app.use(errors);
    await new Promise<void>((resolve) => {
      server = app.listen(0, '127.0.0.1', () => resolve());
    });
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise((r) => server.close(r)));

  const get = (path: string, headers: Record<string, string> = {}) => fetch(`${url}${path}`, { headers });

  it('lets only the listed callers in, with the principal rule of the route', async () => {
    const g = signerOf(gateway);
    const c = signerOf(conversion);
    const ok = await get('/api/who', g.headers({ audience: 'metadata', method: 'GET', path: '/api/who', principal }));
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ principal, caller: 'gateway' });
    // conversion is a trusted service, but not one this route lists.
    expect((await get('/api/who', c.headers({ audience: 'metadata', method: 'GET', path: '/api/who', principal }))).status).toBe(403);
    // The gateway without a user is not enough for a user route.
    expect((await get('/api/who', g.headers({ audience: 'metadata', method: 'GET', path: '/api/who' }))).status).toBe(401);
    expect((await get('/internal/settings', c.headers({ audience: 'metadata', method: 'GET', path: '/internal/settings' }))).status).toBe(200);
    expect((await get('/internal/settings', g.headers({ audience: 'metadata', method: 'GET', path: '/internal/settings' }))).status).toBe(403);
  });

  it('answers 401 without a token, and never runs a route that no guard covers', async () => {
    const none = await get('/internal/settings');
    expect(none.status).toBe(401);
    expect(await none.json()).toEqual({ error: { code: 'SERVICE_TOKEN_REQUIRED' } });
    expect((await get('/api/who', { [SERVICE_TOKEN_HEADER]: 'x.y.z' })).status).toBe(401);
    const c = signerOf(conversion);
    const unguarded = await get('/internal/unguarded', c.headers({ audience: 'metadata', method: 'GET', path: '/internal/unguarded' }));
    expect(unguarded.status).toBe(401);
  });
});

describe('configuration', () => {
  const schema = z.object({ ...serviceKeyEnv('gateway'), ...trustedKeysEnv });
  it("accepts a service's own key and a set of public keys", () => {
    const cfg = schema.parse({
      SERVICE_KEY: JSON.stringify(gateway.privateJwk),
      SERVICE_TRUSTED_KEYS: JSON.stringify({ keys: [gateway.publicJwk, conversion.publicJwk] }),
    });
    expect(cfg.SERVICE_KEY.kid).toBe('gateway.k1');
    expect([...cfg.SERVICE_TRUSTED_KEYS.keys()]).toEqual(['gateway.k1', 'conversion.k1']);
  });

  it("refuses another service's key, a private key among the trusted ones, and garbage", () => {
    const result = schema.safeParse({
      SERVICE_KEY: JSON.stringify(conversion.privateJwk),
      SERVICE_TRUSTED_KEYS: JSON.stringify({ keys: [gateway.privateJwk] }),
    });
    expect(result.success).toBe(false);
    const messages = result.error?.issues.map((i) => `${i.path.join('.')}: ${i.message}`) ?? [];
    expect(messages).toEqual([
      'SERVICE_KEY: kid "conversion.k1" belongs to conversion, not to gateway',
      'SERVICE_TRUSTED_KEYS: kid "gateway.k1" is a private key: list public keys only',
    ]);
    expect(schema.safeParse({ SERVICE_KEY: '{', SERVICE_TRUSTED_KEYS: '[]' }).success).toBe(false);
  });
});
