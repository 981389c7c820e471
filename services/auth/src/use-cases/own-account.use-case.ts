import { PERMISSION, requireAny, type Principal } from '@dam/auth-tokens';
import { forbidden, payloadTooLarge } from '@dam/errors';
import type { AuthStore } from '../domain/ports';
import { PREFERENCES_MAX_BYTES, toUserView, type UserView } from '../domain/users';
import { userNotFound } from './manage-users.use-case';

/**
 * Rotating your own upload key or accessID needs you signed in (a JWT), as minting API keys does: a key, even a
 * CREATOR one meant for uploads alone, would otherwise end every link and upload widget of its user (security
 * review F17). Another user's accessID stays with MANAGE_USERS, which may disable that user anyway.
 */
function requireSession(p: Principal, what: string): void {
  if (p.via !== 'jwt') throw forbidden(`Your ${what} is rotated by you signed in (JWT), not with an API key`, 'API_KEY_CANNOT_ROTATE');
}

/** The caller as a user, with its group, permissions and preferences. */
export async function ownProfile(
  store: AuthStore,
  p: Principal,
): Promise<UserView & { group_id: number; permissions: string[]; preferences: Record<string, unknown> }> {
  const user = await store.users.findVisible(p.group_id, p.user_id);
  if (!user) throw userNotFound();
  return { ...toUserView(user), group_id: user.group_id, permissions: p.permissions, preferences: user.preferences };
}

/**
 * A shallow merge into the caller's preferences (a member set to null is removed), at most PREFERENCES_MAX_BYTES.
 * Read and written in one transaction with the row locked: two merges at once each keep the other's members.
 */
export async function mergePreferences(store: AuthStore, p: Principal, changes: Record<string, unknown>): Promise<Record<string, unknown>> {
  return store.transaction(async (tx) => {
    const user = await tx.users.findVisible(p.group_id, p.user_id, true);
    if (!user) throw userNotFound();
    const merged: Record<string, unknown> = { ...user.preferences, ...changes };
    for (const [k, v] of Object.entries(changes)) if (v === null) delete merged[k];
    if (Buffer.byteLength(JSON.stringify(merged)) > PREFERENCES_MAX_BYTES) throw payloadTooLarge(`Preferences are limited to ${PREFERENCES_MAX_BYTES} bytes`);
    await tx.users.setPreferences(user.id, merged);
    return merged;
  });
}

/**
 * A new accessID for signed links (CONTRACT §7): every link signed under the old one answers 403 at once.
 * Yourself (signed in), or any user of the group with MANAGE_USERS.
 */
export async function rotateAccessId(store: AuthStore, p: Principal, userId: number): Promise<string> {
  if (userId !== p.user_id) requireAny(p, [PERMISSION.MANAGE_USERS]);
  else requireSession(p, 'accessID');
  const accessId = await store.users.rotateAccessId(p.group_id, userId);
  if (!accessId) throw userNotFound();
  return accessId;
}

/** A new upload key (CONTRACT §12), for yourself only (signed in): the old key answers 401 at once. */
export async function rotateUploadKey(store: AuthStore, p: Principal): Promise<string> {
  requireSession(p, 'upload key');
  const uploadkey = await store.users.rotateUploadKey(p.group_id, p.user_id);
  if (!uploadkey) throw userNotFound();
  return uploadkey;
}
