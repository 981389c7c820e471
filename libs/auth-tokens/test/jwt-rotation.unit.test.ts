/**
 * JWT_SECRET overlap rotation (issue 31, Kubernetes review "other gaps"): after `k8s:secrets --rotate jwt` the new
 * secret signs, and tokens signed with the one before (JWT_PREVIOUS_SECRET) are accepted until they expire.
 */
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import express, { type ErrorRequestHandler } from 'express';
import jwt from 'jsonwebtoken';
import { isAppError } from '@dam/errors';
import { createAuthenticator, createServiceSigner, generateServiceKey, parseSigningKey, principalFromJwt, principalOf, signJwt, verifyJwt } from '../src';

const CURRENT = 'rotated-jwt-secret-0123456789';
const PREVIOUS = 'previous-jwt-secret-0123456789';
const UNRELATED = 'unrelated-jwt-secret-0123456789';
const user = { sub: 5, gid: 2, role: 3, ep: 1 };
const refused = (code: string) => expect.objectContaining({ kind: 'UNAUTHENTICATED', code });

describe('verifyJwt with the previous secret of a rotation', () => {
  const old = signJwt(user, PREVIOUS, 60).token;

  it('accepts a token signed with JWT_PREVIOUS_SECRET when it is given, with the same claims', () => {
    expect(verifyJwt(old, CURRENT, PREVIOUS)).toMatchObject(user);
    expect(principalFromJwt(old, CURRENT, PREVIOUS)).toMatchObject({ user_id: 5, group_id: 2, role_id: 3, token_epoch: 1, via: 'jwt' });
  });

  it('refuses it without JWT_PREVIOUS_SECRET, and a token of an unrelated secret either way', () => {
    expect(() => verifyJwt(old, CURRENT)).toThrow(refused('INVALID_TOKEN'));
    expect(() => principalFromJwt(old, CURRENT)).toThrow(refused('INVALID_TOKEN'));
    const foreign = signJwt(user, UNRELATED, 60).token;
    expect(() => verifyJwt(foreign, CURRENT, PREVIOUS)).toThrow(refused('INVALID_TOKEN'));
  });

  it('keeps every other check: an expired old token is TOKEN_EXPIRED, alg none and missing claims are refused', () => {
    const exp = Math.floor(Date.now() / 1000) - 10;
    const expired = jwt.sign({ sub: '5', gid: 2, role: 3, jti: 'x', exp }, PREVIOUS);
    expect(() => verifyJwt(expired, CURRENT, PREVIOUS)).toThrow(refused('TOKEN_EXPIRED'));
    const none = jwt.sign({ sub: '5', gid: 2, role: 3, jti: 'x' }, '', { algorithm: 'none' });
    expect(() => verifyJwt(none, CURRENT, PREVIOUS)).toThrow(refused('INVALID_TOKEN'));
    const noGid = jwt.sign({ sub: '5', role: 3, jti: 'x' }, PREVIOUS, { expiresIn: 60 });
    expect(() => verifyJwt(noGid, CURRENT, PREVIOUS)).toThrow(refused('INVALID_TOKEN'));
  });

  it('signs new tokens with the current secret only', () => {
    const fresh = signJwt(user, CURRENT, 60).token;
    expect(verifyJwt(fresh, CURRENT, PREVIOUS)).toMatchObject(user);
    expect(() => jwt.verify(fresh, PREVIOUS)).toThrow(/invalid signature/);
    expect(jwt.verify(fresh, CURRENT)).toMatchObject({ sub: '5' });
  });
});

describe('createAuthenticator with jwtPreviousSecret', () => {
  let edge: Server;
  let url: string;
  const errors: ErrorRequestHandler = (err, _req, res, _next) => {
    res.status(isAppError(err) && err.kind === 'UNAUTHENTICATED' ? 401 : 500).json({ error: { code: isAppError(err) ? err.code : 'INTERNAL_ERROR' } });
  };
  const signer = createServiceSigner(parseSigningKey(JSON.stringify(generateServiceKey('gateway').privateJwk)));

  beforeAll(async () => {
    const app = express();
    // Auth unreachable and no cached status: the token's own claims stand, so only the signature decides here.
    const withPrevious = createAuthenticator({ jwtSecret: CURRENT, jwtPreviousSecret: PREVIOUS, authUrl: 'http://127.0.0.1:9', signer, timeoutMs: 500 });
    const withoutPrevious = createAuthenticator({ jwtSecret: CURRENT, authUrl: 'http://127.0.0.1:9', signer, timeoutMs: 500 });
    app.get('/with', withPrevious, (_req, res) => void res.json(principalOf(res)));
    app.get('/without', withoutPrevious, (_req, res) => void res.json(principalOf(res)));
    app.use(errors);
    await new Promise<void>((resolve) => {
      edge = app.listen(0, '127.0.0.1', () => resolve());
    });
    url = `http://127.0.0.1:${(edge.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise((r) => edge.close(r)));

  const call = async (path: string, token: string) => {
    const res = await fetch(`${url}${path}`, { headers: { authorization: `Bearer ${token}` } });
    const body = (await res.json()) as { user_id?: number; error?: { code: string } };
    return [res.status, body.user_id ?? body.error?.code];
  };

  it('accepts a token of the previous secret only when it is configured', async () => {
    const old = signJwt(user, PREVIOUS, 60).token;
    expect(await call('/with', old)).toEqual([200, 5]);
    expect(await call('/without', old)).toEqual([401, 'INVALID_TOKEN']);
    expect(await call('/with', signJwt(user, UNRELATED, 60).token)).toEqual([401, 'INVALID_TOKEN']);
    expect(await call('/with', signJwt(user, CURRENT, 60).token)).toEqual([200, 5]);
  });
});
