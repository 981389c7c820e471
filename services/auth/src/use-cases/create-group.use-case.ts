import { PERMISSION, ROLES, hasPermission, type Principal } from '@dam/auth-tokens';
import { forbidden } from '@dam/errors';
import type { AuthStore, AuthTx, GroupRecord } from '../domain/ports';
import { hashPassword } from '../domain/passwords';
import { defaultSettings } from '../domain/settings';
import { normalizeEmail, type UserRecord } from '../domain/users';

export interface NewGroupInput {
  name: string;
  admin: { email: string; password: string; first_name: string; last_name: string };
}

/** The operator's group (1) creates tenants; nobody else can. */
const ROOT_GROUP = 1;

/** Inside the caller's transaction: a group, its default settings and its ADMIN, all or nothing. */
export async function insertGroupWithAdmin(tx: AuthTx, input: NewGroupInput, passwordHash: string): Promise<{ group: GroupRecord; admin: UserRecord }> {
  const group = await tx.groups.insert(input.name);
  await tx.settings.insert(group.id, defaultSettings());
  const admin = await tx.users.insert({
    group_id: group.id,
    email: normalizeEmail(input.admin.email),
    password_hash: passwordHash,
    first_name: input.admin.first_name,
    last_name: input.admin.last_name,
    role_id: ROLES.ADMIN,
  });
  return { group, admin };
}

/** A new tenant with its ADMIN, by the ADMIN of group 1 only. */
export async function createGroup(store: AuthStore, p: Principal, input: NewGroupInput): Promise<{ group: GroupRecord; admin: UserRecord }> {
  if (p.group_id !== ROOT_GROUP || p.role_id !== ROLES.ADMIN || !hasPermission(p, PERMISSION.MANAGE_USERS)) {
    throw forbidden('Only the ADMIN of group 1 can create groups');
  }
  // Hash outside the transaction: the KDF is slow and must not hold a connection with open locks.
  const passwordHash = await hashPassword(input.admin.password);
  return store.transaction((tx) => insertGroupWithAdmin(tx, input, passwordHash));
}
