import { createSecretKey, randomUUID, type KeyObject } from 'node:crypto';
import jwt from 'jsonwebtoken';
import { unauthenticated } from '@dam/errors';

export interface JwtInput {
  /** user id */
  sub: number;
  /** group id */
  gid: number;
  /** role id */
  role: number;
  /** The user's token epoch when signed: a later password change or disabling makes the token stale. */
  ep?: number;
}

export interface JwtClaims extends JwtInput {
  /** 0 for tokens signed before epochs existed. */
  ep: number;
  jti: string;
  /** Unix seconds */
  exp: number;
  iat: number;
}

/**
 * The secret as a KeyObject, made once per secret: given a string, jsonwebtoken first tries it as a public key
 * and builds an exception for every token (a fifth of the gateway's CPU per request, measured).
 */
const keys = new Map<string, KeyObject>();
function keyOf(secret: string): KeyObject {
  let key = keys.get(secret);
  if (!key) {
    key = createSecretKey(Buffer.from(secret, 'utf8'));
    if (keys.size > 16) keys.clear();
    keys.set(secret, key);
  }
  return key;
}

export function signJwt(input: JwtInput, secret: string, ttlSeconds: number): { token: string; expiresAt: Date } {
  const iat = Math.floor(Date.now() / 1000);
  const exp = iat + ttlSeconds;
  // `sub` is a string in JWT (RFC 7519 §4.1.2); verifyJwt turns it back into the integer user id.
  const token = jwt.sign({ sub: String(input.sub), gid: input.gid, role: input.role, ep: input.ep ?? 0, jti: randomUUID(), iat, exp }, keyOf(secret), {
    algorithm: 'HS256',
    noTimestamp: true,
  });
  return { token, expiresAt: new Date(exp * 1000) };
}

const positiveInt = (v: unknown): number | undefined => {
  const n = typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : v;
  return typeof n === 'number' && Number.isSafeInteger(n) && n > 0 ? n : undefined;
};

/**
 * Verifies signature (HS256 only: no `alg: none`, no algorithm confusion) and expiry; throws unauthenticated().
 * `previousSecret` (JWT_PREVIOUS_SECRET, during a rotation) verifies only what `secret` refuses for its signature:
 * tokens signed before the rotation keep working until they expire, every other check stays the same.
 */
export function verifyJwt(token: string, secret: string, previousSecret?: string): JwtClaims {
  let payload: string | jwt.JwtPayload;
  try {
    payload = verifiedPayload(token, secret, previousSecret);
  } catch (err) {
    const expired = err instanceof jwt.TokenExpiredError;
    throw unauthenticated(expired ? 'The token has expired' : 'The token is invalid', expired ? 'TOKEN_EXPIRED' : 'INVALID_TOKEN');
  }
  if (typeof payload === 'string') throw unauthenticated('The token is invalid', 'INVALID_TOKEN');
  const sub = positiveInt(payload.sub);
  const gid = positiveInt(payload.gid);
  const role = positiveInt(payload.role);
  if (!sub || !gid || !role || typeof payload.exp !== 'number' || typeof payload.jti !== 'string') {
    throw unauthenticated('The token is invalid', 'INVALID_TOKEN');
  }
  const ep = typeof payload.ep === 'number' && Number.isSafeInteger(payload.ep) && payload.ep >= 0 ? payload.ep : 0;
  return { sub, gid, role, ep, jti: payload.jti, exp: payload.exp, iat: typeof payload.iat === 'number' ? payload.iat : 0 };
}

/** jsonwebtoken checks the signature before any claim: only a token of another key reaches the previous one. */
function verifiedPayload(token: string, secret: string, previousSecret: string | undefined): string | jwt.JwtPayload {
  try {
    return jwt.verify(token, keyOf(secret), { algorithms: ['HS256'] });
  } catch (err) {
    const otherKey = err instanceof jwt.JsonWebTokenError && err.message === 'invalid signature';
    if (!otherKey || !previousSecret || previousSecret === secret) throw err;
    return jwt.verify(token, keyOf(previousSecret), { algorithms: ['HS256'] });
  }
}
