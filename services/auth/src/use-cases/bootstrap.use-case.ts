import { withTransaction, type Pool } from '@dam/db';
import { GroupRepository } from '../adapters/group.repository';
import { hashPassword } from '../domain/passwords';
import { insertGroupWithAdmin } from './create-group.use-case';

const BOOTSTRAP_LOCK = 72_617_090;

export interface BootstrapResult {
  created: boolean;
  group_id?: number;
  admin_user_id?: number;
}

/**
 * First start on an empty database: group 1 and its ADMIN. A transaction-scoped advisory lock makes
 * concurrent starts queue up; whoever comes second sees the group and does nothing.
 */
export async function bootstrap(pool: Pool, admin: { email: string; password: string }): Promise<BootstrapResult> {
  if ((await new GroupRepository(pool).count()) > 0) return { created: false };
  const passwordHash = await hashPassword(admin.password);
  return withTransaction(pool, async (client) => {
    await client.query('SELECT pg_advisory_xact_lock($1)', [BOOTSTRAP_LOCK]);
    if ((await new GroupRepository(client).count()) > 0) return { created: false };
    const { group, admin: user } = await insertGroupWithAdmin(
      client,
      { name: 'Default', admin: { email: admin.email, password: admin.password, first_name: 'Admin', last_name: '' } },
      passwordHash,
    );
    return { created: true, group_id: group.id, admin_user_id: user.id };
  });
}
