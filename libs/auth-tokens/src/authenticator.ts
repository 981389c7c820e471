import type { Request, RequestHandler } from 'express';
import { forbidden, isAppError, unauthenticated, unavailable } from '@dam/errors';
import { authenticateResponse, internalClient, INTERNAL_PATHS, userStatusResponse, type InternalClient, type UserStatus } from '@dam/internal-api';
import { verifyJwt } from './jwt';
import type { Principal } from './principal';
import { ROLE_NAMES, permissionsFor } from './roles';
import type { ServiceSigner } from './service-token';

export interface AuthenticatorOptions {
  jwtSecret: string;
  /** JWT_PREVIOUS_SECRET: during a rotation, tokens signed with it are still accepted (verifyJwt). */
  jwtPreviousSecret?: string;
  /** Base URL of the auth service, e.g. http://127.0.0.1:8090 */
  authUrl: string;
  /** This edge's own identity: auth answers its internal routes only to callers it knows. */
  signer: ServiceSigner;
  /** How long to wait for the auth service before answering 503. */
  timeoutMs?: number;
  /**
   * How long a JWT user's status (active, current role) from auth is reused (default 10 s; 0 asks every time).
   * This bounds how long a disabled or demoted user keeps the rights of a token signed earlier.
   */
  userStatusTtlMs?: number;
  /**
   * Accept a user's upload key (`X-Upload-Key`, or the query parameter `uploadkey` for browser widgets): only on
   * Upload Asset and the tus endpoints (CONTRACT §12). Elsewhere one answers 401.
   */
  uploadKeys?: boolean;
}

const STATUS_CACHE_MAX = 10_000;

/**
 * Asks auth whether a JWT's user may still act, with a short cache. When auth cannot be reached the last
 * known status is used, or none (the token's own claims then stand): a JWT edge never becomes less available
 * than plain local verification.
 */
function userStatusLookup(opts: AuthenticatorOptions, auth: InternalClient) {
  const ttlMs = opts.userStatusTtlMs ?? 10_000;
  const cache = new Map<string, { status: UserStatus | 'gone'; at: number }>();
  /** Concurrent requests of one user share one lookup instead of each asking auth. */
  const inFlight = new Map<string, Promise<UserStatus | 'gone' | undefined>>();
  const lookup = async (key: string, groupId: number, userId: number): Promise<UserStatus | 'gone' | undefined> => {
    const cached = cache.get(key);
    let status: UserStatus | 'gone';
    try {
      const res = await auth.call({ method: 'GET', path: INTERNAL_PATHS.userStatus(groupId, userId), response: userStatusResponse });
      if (res.ok) status = res.body;
      else if (res.status === 404) status = 'gone';
      else return cached?.status;
    } catch {
      return cached?.status;
    }
    if (cache.size >= STATUS_CACHE_MAX) cache.clear();
    cache.set(key, { status, at: Date.now() });
    return status;
  };
  return (groupId: number, userId: number): Promise<UserStatus | 'gone' | undefined> => {
    const key = `${groupId}:${userId}`;
    const cached = cache.get(key);
    if (cached && Date.now() - cached.at < ttlMs) return Promise.resolve(cached.status);
    let pending = inFlight.get(key);
    if (!pending) {
      pending = lookup(key, groupId, userId).finally(() => inFlight.delete(key));
      inFlight.set(key, pending);
    }
    return pending;
  };
}

export const API_KEY_HEADER = 'x-service-api-key';
export const UPLOAD_KEY_HEADER = 'x-upload-key';

/** The upload key a request carries (header first), if any. */
function uploadKeyOf(req: Request): string | undefined {
  const header = req.header(UPLOAD_KEY_HEADER);
  if (header) return header.trim();
  const q = req.query.uploadkey;
  return typeof q === 'string' && q ? q : undefined;
}

function bearer(req: Request): string | undefined {
  const h = req.header('authorization');
  if (h === undefined) return undefined;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(h);
  // A malformed Authorization header is a bad credential, not a missing one.
  if (!m?.[1]) throw unauthenticated('The Authorization header must be "Bearer <JWT>"', 'INVALID_TOKEN');
  return m[1];
}

/** A JWT carries only ids; permissions come from the role table so a role change applies at the next token. */
export function principalFromJwt(token: string, secret: string, previousSecret?: string): Principal & { token_epoch: number } {
  const claims = verifyJwt(token, secret, previousSecret);
  const roleName = ROLE_NAMES[claims.role];
  if (!roleName) throw unauthenticated('The token is invalid', 'INVALID_TOKEN');
  return {
    user_id: claims.sub,
    group_id: claims.gid,
    role_id: claims.role,
    role_name: roleName,
    permissions: permissionsFor(roleName),
    via: 'jwt',
    token_epoch: claims.ep,
  };
}

async function principalFromKey(body: { api_key: string } | { upload_key: string }, auth: InternalClient, requestId: string | undefined): Promise<Principal> {
  const isApiKey = 'api_key' in body;
  const res = await auth
    .call({ method: 'POST', path: INTERNAL_PATHS.authenticate, body, response: authenticateResponse, ...(requestId ? { requestId } : {}) })
    .catch(() => {
      // The public answer stays the contract's 503 UNAVAILABLE, whatever went wrong inside.
      throw unavailable('The authentication service is unavailable');
    });
  if (res.ok) return res.body;
  if (res.status === 401 || res.status === 403 || res.status === 400) {
    throw isApiKey ? unauthenticated('The API key is invalid', 'INVALID_API_KEY') : unauthenticated('The upload key is invalid', 'INVALID_UPLOAD_KEY');
  }
  throw unavailable('The authentication service is unavailable');
}

/**
 * Public edges: `Authorization: Bearer <jwt>` (signature checked locally, the user's status through auth with a
 * short cache) or `X-Service-Api-Key` (checked by auth on every request, never cached, so a revoked key
 * answers 401 at once). Sets `res.locals.principal`.
 */
export function createAuthenticator(opts: AuthenticatorOptions): RequestHandler {
  const auth = internalClient({ baseUrl: opts.authUrl, audience: 'auth', signer: opts.signer, timeoutMs: opts.timeoutMs ?? 5000 });
  const userStatus = userStatusLookup(opts, auth);
  const fromJwt = async (token: string): Promise<Principal> => {
    const { token_epoch: epoch, ...principal } = principalFromJwt(token, opts.jwtSecret, opts.jwtPreviousSecret);
    const status = await userStatus(principal.group_id, principal.user_id);
    if (status === undefined) return principal;
    if (status === 'gone') throw unauthenticated('The user of this token no longer exists', 'INVALID_TOKEN');
    if (!status.active) throw forbidden('The account is disabled', 'ACCOUNT_DISABLED');
    if (status.token_epoch !== undefined && epoch < status.token_epoch) {
      throw unauthenticated('The token was revoked (password changed or account disabled): log in again', 'TOKEN_REVOKED');
    }
    const roleName = ROLE_NAMES[status.role_id];
    if (status.role_id === principal.role_id || !roleName) return principal;
    // Demoted or promoted since the token was signed: act with the current role.
    return { ...principal, role_id: status.role_id, role_name: roleName, permissions: permissionsFor(roleName) };
  };
  return async (req, res, next) => {
    try {
      const token = bearer(req);
      const key = req.header(API_KEY_HEADER);
      const uploadKey = uploadKeyOf(req);
      const requestId = req.header('x-request-id') ?? res.getHeader('x-request-id')?.toString();
      let principal: Principal;
      if (token !== undefined) principal = await fromJwt(token);
      else if (key) principal = await principalFromKey({ api_key: key.trim() }, auth, requestId);
      else if (uploadKey && opts.uploadKeys) principal = await principalFromKey({ upload_key: uploadKey }, auth, requestId);
      else if (uploadKey)
        throw unauthenticated('An upload key is accepted only by Upload Asset and the resumable uploads of {upload}', 'UPLOAD_KEY_NOT_ACCEPTED');
      else throw unauthenticated('Authentication is required: send a Bearer JWT or an X-Service-Api-Key header');
      res.locals.principal = principal;
      next();
    } catch (err) {
      next(isAppError(err) ? err : unavailable('The authentication service is unavailable'));
    }
  };
}
