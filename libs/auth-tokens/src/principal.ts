import { forbidden } from '@dam/errors';
import { PERMISSION } from './roles';

/** Who is calling, as every service behind the edges sees it. */
export interface Principal {
  user_id: number;
  group_id: number;
  role_id: number;
  role_name: string;
  permissions: string[];
  /** `upload_key`: a user's upload-only credential (CONTRACT §12), with CREATE_ASSET alone. */
  via: 'jwt' | 'api_key' | 'upload_key';
  key_id?: string;
  key_role?: string;
}

/** Who a request counts against (rate limits, concurrent uploads): the API key, or the user. */
export const callerKey = (p: Principal): string => (p.key_id ? `key:${p.key_id}` : `user:${p.group_id}:${p.user_id}`);

export const hasPermission = (p: Principal, token: string): boolean => p.permissions.includes(token);

export const hasAny = (p: Principal, tokens: readonly string[]): boolean => tokens.some((t) => hasPermission(p, t));

/** Throws forbidden() unless the principal holds at least one of the tokens (an empty list allows anyone). */
export function requireAny(p: Principal, tokens: readonly string[]): void {
  if (tokens.length > 0 && !hasAny(p, tokens)) throw forbidden();
}

const owns = (p: Principal, creatorId: number | null | undefined): boolean => creatorId === p.user_id;

/** READ_ASSET reads the whole group; the *_OWN_* tokens reach only the caller's own assets. */
export function canReadAsset(p: Principal, creatorId: number | null | undefined): boolean {
  if (hasPermission(p, PERMISSION.READ_ASSET)) return true;
  return owns(p, creatorId) && hasAny(p, [PERMISSION.READ_OWN_ASSET, PERMISSION.EDIT_OWN_ASSET, PERMISSION.DELETE_OWN_ASSET]);
}

export function canEditAsset(p: Principal, creatorId: number | null | undefined): boolean {
  if (hasPermission(p, PERMISSION.EDIT_ASSET)) return true;
  return owns(p, creatorId) && hasPermission(p, PERMISSION.EDIT_OWN_ASSET);
}

export function canDeleteAsset(p: Principal, creatorId: number | null | undefined): boolean {
  if (hasPermission(p, PERMISSION.DELETE_ASSET)) return true;
  return owns(p, creatorId) && hasPermission(p, PERMISSION.DELETE_OWN_ASSET);
}

/** True when the principal may only see its own assets (list and search queries add `creator_id = user_id`). */
export const readsOwnOnly = (p: Principal): boolean => !hasPermission(p, PERMISSION.READ_ASSET);
