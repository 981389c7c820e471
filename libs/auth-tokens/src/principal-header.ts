import { createHmac, timingSafeEqual } from 'node:crypto';
import type { RequestHandler, Response } from 'express';
import { unauthenticated } from '@dam/errors';
import type { Principal } from './principal';

export const PRINCIPAL_HEADER = 'x-dam-principal';
export const PRINCIPAL_SIG_HEADER = 'x-dam-principal-sig';

type HeaderBag = Record<string, string | string[] | undefined>;

const sign = (value: string, secret: string): Buffer => createHmac('sha256', secret).update(value, 'utf8').digest();

/** The two headers an edge (gateway, upload) sends to the service behind it. */
export function encodePrincipal(p: Principal, secret: string): Record<typeof PRINCIPAL_HEADER | typeof PRINCIPAL_SIG_HEADER, string> {
  const body: Principal = {
    user_id: p.user_id,
    group_id: p.group_id,
    role_id: p.role_id,
    role_name: p.role_name,
    permissions: [...p.permissions],
    via: p.via,
    ...(p.key_id !== undefined ? { key_id: p.key_id } : {}),
    ...(p.key_role !== undefined ? { key_role: p.key_role } : {}),
  };
  const value = Buffer.from(JSON.stringify(body), 'utf8').toString('base64url');
  return { [PRINCIPAL_HEADER]: value, [PRINCIPAL_SIG_HEADER]: sign(value, secret).toString('base64url') };
}

const single = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? undefined : v);
const isInt = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v > 0;

function toPrincipal(raw: unknown): Principal | null {
  if (typeof raw !== 'object' || raw === null) return null;
  const r = raw as Record<string, unknown>;
  if (!isInt(r.user_id) || !isInt(r.group_id) || !isInt(r.role_id) || typeof r.role_name !== 'string') return null;
  if (!Array.isArray(r.permissions) || !r.permissions.every((t) => typeof t === 'string')) return null;
  if (r.via !== 'jwt' && r.via !== 'api_key') return null;
  const p: Principal = {
    user_id: r.user_id,
    group_id: r.group_id,
    role_id: r.role_id,
    role_name: r.role_name,
    permissions: r.permissions as string[],
    via: r.via,
  };
  if (typeof r.key_id === 'string') p.key_id = r.key_id;
  if (typeof r.key_role === 'string') p.key_role = r.key_role;
  return p;
}

/** The principal when both headers are present and the signature matches (constant-time); otherwise null. */
export function decodePrincipal(headers: HeaderBag, secret: string): Principal | null {
  const value = single(headers[PRINCIPAL_HEADER]);
  const sig = single(headers[PRINCIPAL_SIG_HEADER]);
  if (!value || !sig) return null;
  const expected = sign(value, secret);
  const given = Buffer.from(sig, 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
  try {
    return toPrincipal(JSON.parse(Buffer.from(value, 'base64url').toString('utf8')));
  } catch {
    return null;
  }
}

/** Internal services: every route behind this needs a principal signed by an edge. */
export function requirePrincipal(secret: string): RequestHandler {
  return (req, res, next) => {
    const p = decodePrincipal(req.headers, secret);
    if (!p) {
      next(unauthenticated());
      return;
    }
    res.locals.principal = p;
    next();
  };
}

/** The principal set by requirePrincipal or the authenticator; throws when a route forgot the middleware. */
export function principalOf(res: Response): Principal {
  const p = res.locals.principal as Principal | undefined;
  if (!p) throw unauthenticated();
  return p;
}
