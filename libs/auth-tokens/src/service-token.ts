import { createPrivateKey, createPublicKey, generateKeyPairSync, randomUUID, type JsonWebKey, type KeyObject } from 'node:crypto';
import type { RequestHandler, Response } from 'express';
import jwt from 'jsonwebtoken';
import { forbidden, unauthenticated, unavailable } from '@dam/errors';
import type { Principal } from './principal';
import { toPrincipal } from './principal-claims';
import { bodyHash, bodyMismatch, receivedBody, UNSIGNED_BODY, type ReceivedBody } from './service-token-body';
import { memoryReplayStore, type ReplayStore } from './service-token-replay';

/**
 * Service identity (ARCHITECTURE rule 9). Every internal HTTP call carries one short-lived token signed with
 * the calling service's own private key (ES256). The token names its audience (the called service), the
 * method, path and body it was issued for, and, when the call acts for a user, that user's principal. Verifiers
 * hold only public keys, so a compromised service can sign as itself and nothing more, and each route says
 * which services may call it.
 */
export const SERVICE_TOKEN_HEADER = 'x-dam-service-token';

/** Tokens live about a minute: long enough for clock skew and a slow hop, short enough that a leak is moot. */
export const SERVICE_TOKEN_TTL_SECONDS = 60;
const CLOCK_TOLERANCE_SECONDS = 5;
const TOKEN_TYPE = 'dam-call+jwt';
const SERVICE_NAME = /^[a-z][a-z0-9-]{0,39}$/;
const KEY_ID = /^([a-z][a-z0-9-]{0,39})\.[A-Za-z0-9_-]{1,64}$/;

/** `<service>.<suffix>`: the key id names the service that holds the private key. */
export function serviceOfKeyId(kid: string): string | undefined {
  return KEY_ID.exec(kid)?.[1];
}

export interface ServiceJwk extends JsonWebKey {
  kid: string;
}

/** generateKeyPairSync encoding to JWK (in Node since 16.9), which @types/node has no overload for. */
const generateJwkPair = generateKeyPairSync as unknown as (
  type: 'ec',
  options: { namedCurve: string; publicKeyEncoding: { format: 'jwk' }; privateKeyEncoding: { format: 'jwk' } },
) => { privateKey: JsonWebKey; publicKey: JsonWebKey };

/** A new P-256 key pair for `service`, as JWKs: the private one for the service, the public one for verifiers. */
export function generateServiceKey(service: string, suffix: string = randomUUID().slice(0, 8)): { privateJwk: ServiceJwk; publicJwk: ServiceJwk } {
  if (!SERVICE_NAME.test(service)) throw new Error(`"${service}" is not a service name`);
  const kid = `${service}.${suffix}`;
  if (!serviceOfKeyId(kid)) throw new Error(`"${suffix}" cannot be part of a key id`);
  // Encoded as JWKs by the generation itself. Exporting the KeyObjects it returns can hang Node 20 for good: the
  // export holds the key's mutex while it allocates, a garbage collection then finalizes the generation job, and the
  // job's destructor waits for the same mutex (seen in CI; a loop of generate + export hangs within ~2,000 keys).
  const { privateKey, publicKey } = generateJwkPair('ec', { namedCurve: 'P-256', publicKeyEncoding: { format: 'jwk' }, privateKeyEncoding: { format: 'jwk' } });
  const meta = { kid, alg: 'ES256', use: 'sig' };
  return { privateJwk: { ...privateKey, ...meta }, publicJwk: { ...publicKey, ...meta } };
}

function ecKey(jwk: JsonWebKey, kind: 'private' | 'public'): KeyObject {
  if (jwk.kty !== 'EC' || jwk.crv !== 'P-256') throw new Error('must be a P-256 EC key (ES256)');
  if (kind === 'private' && typeof jwk.d !== 'string') throw new Error('must be a private key (no "d" member)');
  const key = kind === 'private' ? createPrivateKey({ key: jwk, format: 'jwk' }) : createPublicKey({ key: jwk, format: 'jwk' });
  return key;
}

const parseJson = (text: string, what: string): unknown => {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new Error(`${what} is not valid JSON`);
  }
};

export interface SigningKey {
  kid: string;
  service: string;
  privateKey: KeyObject;
}

/** `SERVICE_KEY`: the service's own private JWK (with its `kid`). Throws a readable message when unusable. */
export function parseSigningKey(text: string, expectedService?: string): SigningKey {
  const jwk = parseJson(text, 'the key') as ServiceJwk;
  if (typeof jwk !== 'object' || jwk === null || typeof jwk.kid !== 'string') throw new Error('must be a JWK with a "kid"');
  const service = serviceOfKeyId(jwk.kid);
  if (!service) throw new Error(`kid "${jwk.kid}" must be "<service>.<id>"`);
  if (expectedService !== undefined && service !== expectedService) {
    throw new Error(`kid "${jwk.kid}" belongs to ${service}, not to ${expectedService}`);
  }
  return { kid: jwk.kid, service, privateKey: ecKey(jwk, 'private') };
}

export interface TrustedKey {
  service: string;
  publicKey: KeyObject;
}

/**
 * `SERVICE_TRUSTED_KEYS`: a JWK Set of the public keys of every service allowed to call this one. A service
 * may have two keys at once: that is how a key is rotated without downtime (trust the new key everywhere,
 * switch the signer, then drop the old key).
 */
export function parseTrustedKeys(text: string): Map<string, TrustedKey> {
  const set = parseJson(text, 'the key set') as { keys?: unknown };
  if (typeof set !== 'object' || set === null || !Array.isArray(set.keys)) throw new Error('must be a JWK Set: {"keys": [...]}');
  const out = new Map<string, TrustedKey>();
  for (const entry of set.keys as ServiceJwk[]) {
    const kid = typeof entry?.kid === 'string' ? entry.kid : '';
    const service = serviceOfKeyId(kid);
    if (!service) throw new Error(`kid "${kid}" must be "<service>.<id>"`);
    if (out.has(kid)) throw new Error(`kid "${kid}" appears twice`);
    // A private member here would mean the private key was pasted into every verifier.
    if ('d' in entry) throw new Error(`kid "${kid}" is a private key: list public keys only`);
    out.set(kid, { service, publicKey: ecKey(entry, 'public') });
  }
  return out;
}

/** What one call is for: who it goes to, the exact request, and on whose behalf. */
export interface CallTarget {
  /** The called service's name (the token's audience). */
  audience: string;
  method: string;
  /** Path and query exactly as sent (`/api/v1/assets/x/data?y=1`). */
  path: string;
  /** The user the call acts for; absent for the service's own calls. */
  principal?: Principal;
  /** The end client's address as the public edge determined it (rate limits, audit). */
  clientAddress?: string;
  /** The exact body bytes sent (an internal call's JSON text); absent: the request has no body. */
  body?: string | Uint8Array;
  /**
   * The body is forwarded as a stream the signer never holds (the gateway proxying a body its JSON parser did not
   * read): the token says so (`bh: "UNSIGNED"`), and verifiers accept it only for a body they do not parse.
   */
  streamedBody?: boolean;
}

export interface ServiceSigner {
  readonly service: string;
  /** A token for exactly one request. */
  sign(target: CallTarget): string;
  /** The header carrying `sign(target)`. */
  headers(target: CallTarget): Record<string, string>;
}

export function createServiceSigner(key: SigningKey): ServiceSigner {
  const sign = (t: CallTarget): string => {
    const claims: Record<string, unknown> = {
      htm: t.method.toUpperCase(),
      htu: t.path,
      bh: t.streamedBody ? UNSIGNED_BODY : bodyHash(t.body ?? ''),
      jti: randomUUID(),
    };
    if (t.principal) claims.prn = t.principal;
    if (t.clientAddress) claims.addr = t.clientAddress;
    return jwt.sign(claims, key.privateKey, {
      algorithm: 'ES256',
      keyid: key.kid,
      header: { alg: 'ES256', kid: key.kid, typ: TOKEN_TYPE },
      issuer: key.service,
      audience: t.audience,
      expiresIn: SERVICE_TOKEN_TTL_SECONDS,
    });
  };
  return { service: key.service, sign, headers: (t) => ({ [SERVICE_TOKEN_HEADER]: sign(t) }) };
}

/** A verified internal call. */
export interface ServiceCall {
  /** The calling service (from the key that signed the token, not from anything the caller claims). */
  caller: string;
  principal?: Principal;
  clientAddress?: string;
}

export interface ServiceVerifierOptions {
  /** This service's name: tokens for any other audience are refused. */
  service: string;
  trusted: Map<string, TrustedKey>;
  now?: () => number;
  /**
   * Token ids seen by every replica of this service (e.g. a NATS KV bucket): a token for a request that changes
   * state (any method but GET and HEAD) is single-use across them, not only in this process. The process's own
   * memory is always asked first, for every method.
   */
  replay?: ReplayStore;
  /**
   * The shared store could not answer: the token was still checked against this process's memory, and is accepted
   * (`open`, the default: an outage of the store does not stop every internal call) or refused 503 (`closed`).
   */
  replayUnavailable?: 'open' | 'closed';
  /**
   * Tokens without a body binding (`bh`, made by a signer older than security review I6): refused (`required`, the
   * default), or accepted with their body unchecked (`optional`) for the time a rolling upgrade runs old signers
   * beside new verifiers. Default: env `SERVICE_TOKEN_BODY_BINDING` (`required` unless it says `optional`).
   */
  bodyBinding?: 'required' | 'optional';
  /** Hears of the shared store's failure once per outage: the first failure after it last answered (to log it). */
  onReplayStoreError?: (error: unknown) => void;
}

export interface GuardOptions {
  /** The services allowed to call the routes behind this guard (an explicit list, never "anyone inside"). */
  callers: readonly string[];
  /** `required`: the call must act for a user (routes of the public API); `none`: a service's own call. */
  principal: 'required' | 'optional' | 'none';
}

/**
 * Requests whose token is single-use in this process only, not across replicas. A token is bound to its method, path,
 * query, body, caller, user and minute, so replaying a read at another replica repeats exactly that read, whose
 * answer whoever captured the token could read on the same wire; the shared claim (a NATS round trip, a quarter of a
 * Get Data's cost in metadata: issue 33) is kept for what changes state.
 */
const SAFE_METHODS = new Set(['GET', 'HEAD']);

const invalid = (why: string) => unauthenticated(`Invalid service credentials: ${why}`, 'INVALID_SERVICE_TOKEN');

export interface ServiceVerifier {
  /**
   * Verifies a token for this request against this process's memory of used tokens; throws unauthenticated() for
   * anything but a fresh, matching one. `body`: what was received (see receivedBody); without it the body is not
   * checked, which only a caller that checks nothing of the body may do (a test stub). The guard always checks it.
   */
  verify(token: string | undefined, method: string, path: string, body?: ReceivedBody): ServiceCall;
  /** Express guard: verifies, checks the caller list and the principal rule, sets `res.locals`. */
  guard(options: GuardOptions): RequestHandler;
  /** Mount after the guards of a prefix: refuses any request under it that no guard verified. */
  onlyGuarded: RequestHandler;
}

export function createServiceVerifier(opts: ServiceVerifierOptions): ServiceVerifier {
  const now = opts.now ?? Date.now;
  const seen = memoryReplayStore(now);
  const bindingOptional = (opts.bodyBinding ?? process.env.SERVICE_TOKEN_BODY_BINDING) === 'optional';

  /** The verified call, and the token's id and end for the shared replay memory. */
  const check = (token: string | undefined, method: string, path: string, body: ReceivedBody | undefined) => {
    if (!token) throw unauthenticated('This endpoint is for services of the suite only', 'SERVICE_TOKEN_REQUIRED');
    const decoded = jwt.decode(token, { complete: true });
    const kid = decoded?.header.kid;
    if (!decoded || typeof kid !== 'string' || decoded.header.typ !== TOKEN_TYPE) throw invalid('malformed token');
    const key = opts.trusted.get(kid);
    if (!key) throw invalid('unknown signing key');
    let claims: jwt.JwtPayload;
    try {
      claims = jwt.verify(token, key.publicKey, {
        algorithms: ['ES256'],
        audience: opts.service,
        issuer: key.service,
        clockTolerance: CLOCK_TOLERANCE_SECONDS,
        clockTimestamp: Math.floor(now() / 1000),
      }) as jwt.JwtPayload;
    } catch (error) {
      throw invalid(error instanceof jwt.TokenExpiredError ? 'expired' : error instanceof Error ? error.message : 'rejected');
    }
    const { iat, exp, jti, htm, htu, bh } = claims;
    if (typeof iat !== 'number' || typeof exp !== 'number' || typeof jti !== 'string') throw invalid('missing claims');
    // A signer cannot mint long-lived tokens: the lifetime is ours to bound, not the token's.
    if (exp - iat > SERVICE_TOKEN_TTL_SECONDS || iat > now() / 1000 + CLOCK_TOLERANCE_SECONDS) throw invalid('lifetime out of bounds');
    if (htm !== method.toUpperCase() || htu !== path) throw invalid('issued for another request');
    // Every token says what body it was issued for; a verifier that received one checks it (security review I6).
    if (typeof bh !== 'string' && !bindingOptional) throw invalid('no body binding');
    const mismatch = body === undefined || bh === undefined ? undefined : bodyMismatch(bh, body);
    if (mismatch) throw invalid(mismatch);
    const expiresAtMs = exp * 1000 + CLOCK_TOLERANCE_SECONDS * 1000;
    if (!seen.claimNow(jti, expiresAtMs)) throw invalid('already used');
    const call: ServiceCall = { caller: key.service };
    if (claims.prn !== undefined) {
      const principal = toPrincipal(claims.prn);
      if (!principal) throw invalid('malformed principal');
      call.principal = principal;
    }
    if (typeof claims.addr === 'string') call.clientAddress = claims.addr;
    return { call, jti, expiresAtMs };
  };

  const verify = (token: string | undefined, method: string, path: string, body?: ReceivedBody): ServiceCall => check(token, method, path, body).call;

  /** The other replicas' memory: a token this process has not seen may have been used at another one. */
  let storeFailing = false;
  const claimShared = async (jti: string, expiresAtMs: number): Promise<void> => {
    if (!opts.replay) return;
    let fresh: boolean;
    try {
      fresh = await opts.replay.claim(jti, expiresAtMs);
      storeFailing = false;
    } catch (error) {
      if (!storeFailing) opts.onReplayStoreError?.(error);
      storeFailing = true;
      if (opts.replayUnavailable === 'closed') throw unavailable('The service token replay store is unavailable', 'SERVICE_TOKEN_UNAVAILABLE');
      return;
    }
    if (!fresh) throw invalid('already used');
  };

  const guard = (g: GuardOptions): RequestHandler => {
    const allowed = new Set(g.callers);
    return async (req, res, next) => {
      try {
        // Verified once per request (a token is single-use); a second guard on the way only adds its rules.
        let call = res.locals.serviceCall as ServiceCall | undefined;
        if (!call) {
          const checked = check(single(req.headers[SERVICE_TOKEN_HEADER]), req.method, req.originalUrl, receivedBody(req));
          if (!SAFE_METHODS.has(req.method)) await claimShared(checked.jti, checked.expiresAtMs);
          call = checked.call;
          res.locals.serviceCall = call;
          if (call.principal) res.locals.principal = call.principal;
        }
        if (!allowed.has(call.caller)) throw forbidden(`${call.caller} may not call this endpoint`, 'CALLER_NOT_ALLOWED');
        if (g.principal === 'required' && !call.principal) throw invalid('no principal for a user endpoint');
        if (g.principal === 'none' && call.principal) throw invalid('unexpected principal');
        next();
      } catch (error) {
        next(error);
      }
    };
  };

  /** Closes a prefix: whatever no guard verified (a route added without one) answers 401, never runs unchecked. */
  const onlyGuarded: RequestHandler = (_req, res, next) => {
    next(res.locals.serviceCall ? undefined : unauthenticated('This endpoint is for services of the suite only', 'SERVICE_TOKEN_REQUIRED'));
  };

  return { verify, guard, onlyGuarded };
}

const single = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? undefined : v);

/** The verified call behind a guarded route. */
export function serviceCallOf(res: Response): ServiceCall {
  const call = res.locals.serviceCall as ServiceCall | undefined;
  if (!call) throw unauthenticated();
  return call;
}
