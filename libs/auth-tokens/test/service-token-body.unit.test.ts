import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import express, { type ErrorRequestHandler, type Express } from 'express';
import jwt from 'jsonwebtoken';
import { isAppError } from '@dam/errors';
import { createServiceSigner, createServiceVerifier, generateServiceKey, parseSigningKey, parseTrustedKeys } from '../src';
import { bucketReplayStore, memoryReplayStore, type ReplayStore } from '../src/service-token-replay';

/**
 * Security review I6: a service token is bound to its request's body (`bh`), and its single use can be shared by
 * every replica of the called service. Before, a token captured on the wire verified with any body, and a second
 * replica had never seen it.
 */
const gateway = generateServiceKey('gateway', 'k1');
const signer = createServiceSigner(parseSigningKey(JSON.stringify(gateway.privateJwk)));
const trusted = parseTrustedKeys(JSON.stringify({ keys: [gateway.publicJwk] }));
const PATH = '/api/v1/assets/a/data/update';
const A = JSON.stringify({ title: 'mine' });
const B = JSON.stringify({ title: 'theirs', owner: 1 });

const code = (fn: () => unknown): string => {
  try {
    fn();
  } catch (e) {
    return isAppError(e) ? `${e.kind}:${e.code}` : 'other';
  }
  return 'accepted';
};

describe('service tokens bound to the body (I6)', () => {
  it('a token for body A does not verify with body B', () => {
    const verifier = createServiceVerifier({ service: 'metadata', trusted });
    const token = signer.sign({ audience: 'metadata', method: 'POST', path: PATH, body: A });
    expect(code(() => verifier.verify(token, 'POST', PATH, { bytes: B }))).toBe('UNAUTHENTICATED:INVALID_SERVICE_TOKEN');
    // Nor with no body, nor as a stream; with its own body it does (the refusals above did not use it up).
    expect(code(() => verifier.verify(token, 'POST', PATH, { bytes: '' }))).toBe('UNAUTHENTICATED:INVALID_SERVICE_TOKEN');
    expect(code(() => verifier.verify(token, 'POST', PATH, 'streamed'))).toBe('UNAUTHENTICATED:INVALID_SERVICE_TOKEN');
    expect(code(() => verifier.verify(token, 'POST', PATH, { bytes: A }))).toBe('accepted');
  });

  it('a token without a body is bound to the empty body; an unbound token (no bh) is refused', () => {
    const verifier = createServiceVerifier({ service: 'metadata', trusted });
    expect(code(() => verifier.verify(signer.sign({ audience: 'metadata', method: 'POST', path: PATH }), 'POST', PATH, { bytes: B }))).toBe(
      'UNAUTHENTICATED:INVALID_SERVICE_TOKEN',
    );
    expect(code(() => verifier.verify(signer.sign({ audience: 'metadata', method: 'GET', path: PATH }), 'GET', PATH, { bytes: '' }))).toBe('accepted');
    const key = parseSigningKey(JSON.stringify(gateway.privateJwk));
    const legacy = jwt.sign({ htm: 'POST', htu: PATH, jti: 'j-no-bh' }, key.privateKey, {
      algorithm: 'ES256',
      header: { alg: 'ES256', kid: key.kid, typ: 'dam-call+jwt' },
      issuer: 'gateway',
      audience: 'metadata',
      expiresIn: 60,
    });
    expect(code(() => verifier.verify(legacy, 'POST', PATH, { bytes: B }))).toBe('UNAUTHENTICATED:INVALID_SERVICE_TOKEN');
    // During a rolling upgrade (old signers beside new verifiers) it may pass, body unchecked; bound tokens are still checked.
    const upgrading = createServiceVerifier({ service: 'metadata', trusted, bodyBinding: 'optional' });
    expect(code(() => upgrading.verify(legacy, 'POST', PATH, { bytes: B }))).toBe('accepted');
    const bound = signer.sign({ audience: 'metadata', method: 'POST', path: PATH, body: A });
    expect(code(() => upgrading.verify(bound, 'POST', PATH, { bytes: B }))).toBe('UNAUTHENTICATED:INVALID_SERVICE_TOKEN');
  });

  it('UNSIGNED (a streamed body) passes only for a body the service does not parse', () => {
    const verifier = createServiceVerifier({ service: 'metadata', trusted });
    const streamed = () => signer.sign({ audience: 'metadata', method: 'POST', path: PATH, streamedBody: true });
    expect(code(() => verifier.verify(streamed(), 'POST', PATH, { bytes: B }))).toBe('UNAUTHENTICATED:INVALID_SERVICE_TOKEN');
    expect(code(() => verifier.verify(streamed(), 'POST', PATH, { bytes: '' }))).toBe('UNAUTHENTICATED:INVALID_SERVICE_TOKEN');
    expect(code(() => verifier.verify(streamed(), 'POST', PATH, 'streamed'))).toBe('accepted');
  });
});

const errors: ErrorRequestHandler = (err, _req, res, _next) => {
  const status = isAppError(err) ? (({ UNAUTHENTICATED: 401, FORBIDDEN: 403, UNAVAILABLE: 503 } as Record<string, number>)[err.kind] ?? 400) : 500;
  res.status(status).json({ error: { code: isAppError(err) ? err.code : 'INTERNAL_ERROR' } });
};

/** A replica of a service: express.json, then the guard, as createHttpApp and the services mount them. */
function replica(opts: { replay?: ReplayStore; replayUnavailable?: 'open' | 'closed' } = {}): Express {
  const verifier = createServiceVerifier({ service: 'metadata', trusted, ...opts });
  const app = express();
  app.use(express.json({ type: ['application/json', 'application/*+json'] }));
  app.use('/api', verifier.guard({ callers: ['gateway'], principal: 'optional' }));
  app.post(PATH, (req, res) => {
    res.json({ received: req.body ?? null });
  });
  app.get(PATH, (_req, res) => {
    res.json({ read: true });
  });
  app.post('/api/v1/upload', (req, res) => {
    let n = 0;
    req.on('data', (c: Buffer) => (n += c.length));
    req.on('end', () => res.json({ streamed: n }));
  });
  app.use(errors);
  return app;
}

describe('the guard checks the body it received (I6)', () => {
  const servers: Server[] = [];
  const start = async (app: Express): Promise<string> => {
    const server = await new Promise<Server>((resolve) => {
      const s = app.listen(0, '127.0.0.1', () => resolve(s));
    });
    servers.push(server);
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  };
  afterAll(() => Promise.all(servers.map((s) => new Promise((r) => s.close(r)))));

  const post = (base: string, path: string, token: Record<string, string>, body: string, type = 'application/json') =>
    fetch(`${base}${path}`, { method: 'POST', headers: { ...token, 'content-type': type }, body });

  it('a token captured with body A and sent again with body B is refused 401; with A it passes', async () => {
    const base = await start(replica());
    const target = { audience: 'metadata', method: 'POST', path: PATH, body: A };
    const tampered = await post(base, PATH, signer.headers(target), B);
    expect(tampered.status).toBe(401);
    expect(await tampered.json()).toEqual({ error: { code: 'INVALID_SERVICE_TOKEN' } });
    // Spacing that parses to the same value is the same body (the route acts on the value).
    const ok = await post(base, PATH, signer.headers(target), JSON.stringify(JSON.parse(A), null, 2));
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ received: JSON.parse(A) });
  });

  it('a streamed body needs an UNSIGNED token, and an UNSIGNED token cannot carry a JSON body', async () => {
    const base = await start(replica());
    const unsigned = () => signer.headers({ audience: 'metadata', method: 'POST', path: '/api/v1/upload', streamedBody: true });
    const raw = await post(base, '/api/v1/upload', unsigned(), 'raw bytes', 'application/octet-stream');
    expect(raw.status).toBe(200);
    expect(await raw.json()).toEqual({ streamed: 9 });
    expect((await post(base, '/api/v1/upload', unsigned(), B)).status).toBe(401);
    const boundToNothing = signer.headers({ audience: 'metadata', method: 'POST', path: '/api/v1/upload' });
    expect((await post(base, '/api/v1/upload', boundToNothing, 'raw bytes', 'application/octet-stream')).status).toBe(401);
  });

  it('two replicas sharing a replay store refuse the second use of a token (each alone accepted it)', async () => {
    const shared = memoryReplayStore();
    const one = await start(replica({ replay: shared }));
    const two = await start(replica({ replay: shared }));
    const token = signer.headers({ audience: 'metadata', method: 'POST', path: PATH, body: A });
    expect((await post(one, PATH, token, A)).status).toBe(200);
    const replayed = await post(two, PATH, token, A);
    expect(replayed.status).toBe(401);
    expect(await replayed.json()).toEqual({ error: { code: 'INVALID_SERVICE_TOKEN' } });
    // Without the shared store the second replica had never seen it.
    const alone = await start(replica());
    expect((await post(alone, PATH, token, A)).status).toBe(200);
  });

  it('a read (GET, HEAD) is single-use in each replica, and does not ask the shared store (issue 33: a NATS round trip per read)', async () => {
    const asked: string[] = [];
    const shared = memoryReplayStore();
    const counting: ReplayStore = { claim: (jti, exp) => (asked.push(jti), shared.claim(jti, exp)) };
    const one = await start(replica({ replay: counting }));
    const two = await start(replica({ replay: counting }));
    const token = signer.headers({ audience: 'metadata', method: 'GET', path: PATH });
    const get = (base: string) => fetch(`${base}${PATH}`, { headers: token });
    expect((await get(one)).status).toBe(200);
    expect((await get(one)).status).toBe(401);
    // The same read at another replica: what the first answer already showed whoever holds the token.
    expect((await get(two)).status).toBe(200);
    expect(asked).toEqual([]);
    // A write still claims its token in the shared store.
    expect((await post(one, PATH, signer.headers({ audience: 'metadata', method: 'POST', path: PATH, body: A }), A)).status).toBe(200);
    expect(asked).toHaveLength(1);
  });

  it('a shared store that cannot answer: open by default (this process still checks), 503 when closed', async () => {
    const down: ReplayStore = { claim: () => Promise.reject(new Error('nats down')) };
    const open = await start(replica({ replay: down }));
    const closed = await start(replica({ replay: down, replayUnavailable: 'closed' }));
    const token = () => signer.headers({ audience: 'metadata', method: 'POST', path: PATH, body: A });
    const t = token();
    expect((await post(open, PATH, t, A)).status).toBe(200);
    expect((await post(open, PATH, t, A)).status).toBe(401);
    const refused = await post(closed, PATH, token(), A);
    expect(refused.status).toBe(503);
    expect(await refused.json()).toEqual({ error: { code: 'SERVICE_TOKEN_UNAVAILABLE' } });
  });
});

describe('bucketReplayStore', () => {
  it('claims each token id once through create-if-absent, and passes other failures on', async () => {
    const keys = new Set<string>();
    const bucket = {
      create: (key: string) => {
        if (!/^[-/_=.a-zA-Z0-9]+$/.test(key)) return Promise.reject(new Error('invalid key'));
        if (keys.has(key)) return Promise.reject(new Error('wrong last sequence: 7'));
        keys.add(key);
        return Promise.resolve(keys.size);
      },
    };
    const store = bucketReplayStore(bucket);
    expect(await store.claim('a b/c*>', Date.now() + 60_000)).toBe(true);
    expect(await store.claim('a b/c*>', Date.now() + 60_000)).toBe(false);
    expect(await store.claim('other', Date.now() + 60_000)).toBe(true);
    await expect(bucketReplayStore({ create: () => Promise.reject(new Error('timeout')) }).claim('x', 0)).rejects.toThrow('timeout');
  });
});
