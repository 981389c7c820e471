import { PERMISSION, ROLE_NAMES, hashApiKey, permissionsFor, type Principal } from '@dam/auth-tokens';
import type { AccessIdAnswer, AccessOwner, UserStatus } from '@dam/internal-api';
import { notFound, unauthenticated } from '@dam/errors';
import { apiKeyPrincipal } from '../domain/api-keys';
import type { AuthStore } from '../domain/ports';
import type { Settings } from '../domain/settings';

/**
 * What the services ask auth about identities (docs/internal-interfaces.md). Every answer is looked up on each
 * call, never cached here, so a revoked key, a rotated credential or a disabled user stops at once.
 */

/**
 * The principal of an upload key or an API key. An upload key acts as its user with CREATE_ASSET alone (if the
 * user's role grants it). An API key acts as its creator limited to its role, and only while the key is not
 * revoked and its creator is not disabled or deleted.
 */
export async function authenticate(store: AuthStore, credential: { upload_key: string } | { api_key: string }): Promise<Principal> {
  if ('upload_key' in credential) {
    const user = await store.users.findByUploadKey(credential.upload_key);
    const roleName = user ? ROLE_NAMES[user.role_id] : undefined;
    if (!user || user.disabled || !roleName) throw unauthenticated('The upload key is invalid', 'INVALID_UPLOAD_KEY');
    return {
      user_id: user.id,
      group_id: user.group_id,
      role_id: user.role_id,
      role_name: roleName,
      permissions: permissionsFor(roleName).filter((t) => t === PERMISSION.CREATE_ASSET),
      via: 'upload_key',
    };
  }
  const found = await store.apiKeys.findByHash(hashApiKey(credential.api_key));
  if (!found || found.user_disabled) throw unauthenticated('The API key is invalid', 'INVALID_API_KEY');
  return apiKeyPrincipal(found.key, found.user_role_id);
}

/** Whether a JWT's user may still act, as which role, and which token epoch is current (the edges cache it briefly). */
export async function userStatus(store: AuthStore, groupId: number, userId: number): Promise<UserStatus> {
  const user = await store.users.findVisible(groupId, userId);
  if (!user) throw notFound('USER_NOT_FOUND', 'User not found');
  return { active: !user.disabled, role_id: user.role_id, token_epoch: user.token_epoch, access_id: user.access_id };
}

/**
 * The accessID the caller's `cdn` links carry: the user's own when signed in; the key's when minted with an API
 * key, so that revoking the key ends them (security review F17).
 */
export async function accessIdOfCaller(store: AuthStore, p: Principal): Promise<AccessIdAnswer> {
  const accessId =
    p.via === 'api_key' && p.key_id ? await store.apiKeys.accessIdOf(p.group_id, p.key_id) : (await store.users.findVisible(p.group_id, p.user_id))?.access_id;
  if (!accessId) throw notFound('ACCESS_ID_NOT_FOUND', 'The caller has no accessID (user deleted or key revoked)');
  return { access_id: accessId };
}

/**
 * Whose links carry an accessID, asked by the edge on every request: a disabled user, a rotated accessID or a
 * revoked key makes the links answer 403. A key's links act as the key does: its user limited to the key's role.
 */
export async function accessOwner(store: AuthStore, accessId: string): Promise<AccessOwner> {
  const user = await store.users.findByAccessId(accessId);
  if (user) return { user_id: user.id, group_id: user.group_id, role_id: user.role_id, active: !user.disabled };
  const key = await store.apiKeys.findByAccessId(accessId);
  if (!key) throw notFound('ACCESS_ID_NOT_FOUND', 'No user or API key has this accessID');
  const acting = apiKeyPrincipal(key.key, key.user_role_id);
  return { user_id: acting.user_id, group_id: acting.group_id, role_id: acting.role_id, active: !key.user_disabled };
}

/**
 * Only the webhook service signs deliveries: every other reader (conversion, transcode, metadata) gets the settings
 * without `webhooks`, whose secrets (and URLs, often bearer tokens themselves) it has no use for (security review I3).
 */
export function settingsFor(caller: string, settings: Settings): Partial<Settings> {
  if (caller === 'webhook') return settings;
  const { webhooks: _webhooks, ...rest } = settings;
  return rest;
}

/** A group's settings as the calling service may see them. */
export async function groupSettingsFor(store: AuthStore, caller: string, groupId: number): Promise<Partial<Settings>> {
  const settings = await store.settings.get(groupId);
  if (!settings) throw notFound('GROUP_NOT_FOUND', 'Group not found');
  return settingsFor(caller, settings);
}
