import type { Request, RequestHandler } from 'express';
import { isAppError, unauthenticated, unavailable } from '@dam/errors';
import { verifyJwt } from './jwt';
import type { Principal } from './principal';
import { ROLE_NAMES, permissionsFor } from './roles';

export interface AuthenticatorOptions {
  jwtSecret: string;
  /** Base URL of the auth service, e.g. http://127.0.0.1:8090 */
  authUrl: string;
  /** How long to wait for the auth service before answering 503. */
  timeoutMs?: number;
}

export const API_KEY_HEADER = 'x-service-api-key';

function bearer(req: Request): string | undefined {
  const h = req.header('authorization');
  if (h === undefined) return undefined;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(h);
  // A malformed Authorization header is a bad credential, not a missing one.
  if (!m?.[1]) throw unauthenticated('The Authorization header must be "Bearer <JWT>"', 'INVALID_TOKEN');
  return m[1];
}

/** A JWT carries only ids; permissions come from the role table so a role change applies at the next token. */
export function principalFromJwt(token: string, secret: string): Principal {
  const claims = verifyJwt(token, secret);
  const roleName = ROLE_NAMES[claims.role];
  if (!roleName) throw unauthenticated('The token is invalid', 'INVALID_TOKEN');
  return {
    user_id: claims.sub,
    group_id: claims.gid,
    role_id: claims.role,
    role_name: roleName,
    permissions: permissionsFor(roleName),
    via: 'jwt',
  };
}

async function principalFromApiKey(key: string, opts: AuthenticatorOptions, requestId: string | undefined): Promise<Principal> {
  let res: Response;
  try {
    res = await fetch(`${opts.authUrl.replace(/\/$/, '')}/internal/v1/authenticate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(requestId ? { 'x-request-id': requestId } : {}) },
      body: JSON.stringify({ api_key: key }),
      signal: AbortSignal.timeout(opts.timeoutMs ?? 5000),
    });
  } catch {
    throw unavailable('The authentication service is unavailable');
  }
  if (res.status === 200) return (await res.json()) as Principal;
  await res.body?.cancel().catch(() => undefined);
  if (res.status === 401 || res.status === 403 || res.status === 400) throw unauthenticated('The API key is invalid', 'INVALID_API_KEY');
  throw unavailable('The authentication service is unavailable');
}

/**
 * Public edges: `Authorization: Bearer <jwt>` (checked locally) or `X-Service-Api-Key` (checked by auth on
 * every request, never cached, so a revoked key answers 401 at once). Sets `res.locals.principal`.
 */
export function createAuthenticator(opts: AuthenticatorOptions): RequestHandler {
  return async (req, res, next) => {
    try {
      const token = bearer(req);
      const key = req.header(API_KEY_HEADER);
      let principal: Principal;
      if (token !== undefined) principal = principalFromJwt(token, opts.jwtSecret);
      else if (key) principal = await principalFromApiKey(key.trim(), opts, req.header('x-request-id') ?? res.getHeader('x-request-id')?.toString());
      else throw unauthenticated('Authentication is required: send a Bearer JWT or an X-Service-Api-Key header');
      res.locals.principal = principal;
      next();
    } catch (err) {
      next(isAppError(err) ? err : unavailable('The authentication service is unavailable'));
    }
  };
}
