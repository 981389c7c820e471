import { ROLES } from '@dam/auth-tokens';
import { withTransaction, type Pool, type PoolClient } from '@dam/db';
import { GroupRepository, type GroupRecord } from '../adapters/group.repository';
import { SettingsRepository } from '../adapters/settings.repository';
import { UserRepository } from '../adapters/user.repository';
import { hashPassword } from '../domain/passwords';
import { defaultSettings } from '../domain/settings';
import { normalizeEmail, type UserRecord } from '../domain/users';

export interface NewGroupInput {
  name: string;
  admin: { email: string; password: string; first_name: string; last_name: string };
}

/** Inside the caller's transaction: a group, its default settings and its ADMIN, all or nothing. */
export async function insertGroupWithAdmin(
  client: PoolClient,
  input: NewGroupInput,
  passwordHash: string,
): Promise<{ group: GroupRecord; admin: UserRecord }> {
  const group = await new GroupRepository(client).insert(input.name);
  await new SettingsRepository(client).insert(group.id, defaultSettings());
  const admin = await new UserRepository(client).insert({
    group_id: group.id,
    email: normalizeEmail(input.admin.email),
    password_hash: passwordHash,
    first_name: input.admin.first_name,
    last_name: input.admin.last_name,
    role_id: ROLES.ADMIN,
  });
  return { group, admin };
}

export async function createGroup(pool: Pool, input: NewGroupInput): Promise<{ group: GroupRecord; admin: UserRecord }> {
  // Hash outside the transaction: the KDF is slow and must not hold a connection with open locks.
  const passwordHash = await hashPassword(input.admin.password);
  return withTransaction(pool, (client) => insertGroupWithAdmin(client, input, passwordHash));
}
