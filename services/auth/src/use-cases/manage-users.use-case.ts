import { PERMISSION, requireAny, type Principal } from '@dam/auth-tokens';
import { conflict, notFound } from '@dam/errors';
import { hashPassword } from '../domain/passwords';
import type { AuthStore, Listed, Page } from '../domain/ports';
import { normalizeEmail, toUserView, type UserView } from '../domain/users';

export const userNotFound = () => notFound('USER_NOT_FOUND', 'User not found');

export interface NewUserInput {
  email: string;
  password: string;
  first_name: string;
  last_name: string;
  role_id: number;
}

export interface UserPatch {
  role_id?: number;
  disabled?: boolean;
  password?: string;
}

/** A user of the caller's group (MANAGE_USERS). */
export async function createUser(store: AuthStore, p: Principal, input: NewUserInput): Promise<UserView> {
  requireAny(p, [PERMISSION.MANAGE_USERS]);
  const user = await store.users.insert({
    group_id: p.group_id,
    email: normalizeEmail(input.email),
    password_hash: await hashPassword(input.password),
    first_name: input.first_name,
    last_name: input.last_name,
    role_id: input.role_id,
  });
  return toUserView(user);
}

export async function listUsers(store: AuthStore, p: Principal, page: Page): Promise<Listed<UserView>> {
  requireAny(p, [PERMISSION.MANAGE_USERS]);
  const { items, total } = await store.users.listInGroup(p.group_id, page);
  return { items: items.map(toUserView), page: page.page, page_size: page.page_size, total };
}

/** Yourself, or any user of the group with MANAGE_USERS. */
export async function getUser(store: AuthStore, p: Principal, userId: number): Promise<UserView> {
  if (userId !== p.user_id) requireAny(p, [PERMISSION.MANAGE_USERS]);
  const user = await store.users.findVisible(p.group_id, userId);
  if (!user) throw userNotFound();
  return toUserView(user);
}

/**
 * Role, disabled, password (MANAGE_USERS). Disabling or a new password ends the user's tokens and upload key (the
 * repository's update); their API keys stop authenticating while they are disabled (authenticate checks the user).
 */
export async function updateUser(store: AuthStore, p: Principal, userId: number, patch: UserPatch): Promise<UserView> {
  requireAny(p, [PERMISSION.MANAGE_USERS]);
  if (!(await store.users.findVisible(p.group_id, userId))) throw userNotFound();
  // An admin locking themselves out (or demoting the last admin by accident) is never what was meant.
  if (userId === p.user_id && (patch.disabled === true || (patch.role_id !== undefined && patch.role_id !== p.role_id))) {
    throw conflict('CANNOT_MODIFY_SELF', 'You cannot disable yourself or change your own role');
  }
  const user = await store.users.update(p.group_id, userId, {
    role_id: patch.role_id,
    disabled: patch.disabled,
    password_hash: patch.password ? await hashPassword(patch.password) : undefined,
  });
  if (!user) throw userNotFound();
  return toUserView(user);
}

/**
 * Deletes a user of the group (MANAGE_USERS), never yourself: the account is soft-deleted and every API key it
 * minted revoked, in one transaction. Two statements apart, a failed revocation left a deleted user whose keys
 * still existed unrevoked, and a retry answered 404 without revoking them.
 */
export async function deleteUser(store: AuthStore, p: Principal, userId: number): Promise<void> {
  requireAny(p, [PERMISSION.MANAGE_USERS]);
  if (userId === p.user_id) throw conflict('CANNOT_MODIFY_SELF', 'You cannot delete yourself');
  await store.transaction(async (tx) => {
    if (!(await tx.users.softDelete(p.group_id, userId))) throw userNotFound();
    await tx.apiKeys.revokeAllOfUser(userId);
  });
}
