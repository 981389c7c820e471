import type { Response } from 'express';
import { unauthenticated } from '@dam/errors';
import type { Principal } from './principal';

const isInt = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v > 0;

/** A principal from a verified token's claims, re-checked member by member; null when anything is off. */
export function toPrincipal(raw: unknown): Principal | null {
  if (typeof raw !== 'object' || raw === null) return null;
  const r = raw as Record<string, unknown>;
  if (!isInt(r.user_id) || !isInt(r.group_id) || !isInt(r.role_id) || typeof r.role_name !== 'string') return null;
  if (!Array.isArray(r.permissions) || !r.permissions.every((t) => typeof t === 'string')) return null;
  if (r.via !== 'jwt' && r.via !== 'api_key' && r.via !== 'upload_key') return null;
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

/** The principal set by a service guard or the authenticator; throws when a route forgot the middleware. */
export function principalOf(res: Response): Principal {
  const p = res.locals.principal as Principal | undefined;
  if (!p) throw unauthenticated();
  return p;
}
