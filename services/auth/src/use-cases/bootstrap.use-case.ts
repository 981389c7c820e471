import type { AuthStore } from '../domain/ports';
import { hashPassword } from '../domain/passwords';
import { insertGroupWithAdmin } from './create-group.use-case';

const BOOTSTRAP_LOCK = 72_617_090;

export interface BootstrapResult {
  created: boolean;
  group_id?: number;
  admin_user_id?: number;
}

/**
 * First start on an empty database: group 1 and its ADMIN. A transaction-scoped lock makes concurrent starts
 * queue up; whoever comes second sees the group and does nothing.
 */
export async function bootstrap(store: AuthStore, admin: { email: string; password: string }): Promise<BootstrapResult> {
  if ((await store.groups.count()) > 0) return { created: false };
  const passwordHash = await hashPassword(admin.password);
  return store.transaction(async (tx) => {
    await tx.lock(BOOTSTRAP_LOCK);
    if ((await tx.groups.count()) > 0) return { created: false };
    const { group, admin: user } = await insertGroupWithAdmin(
      tx,
      { name: 'Default', admin: { email: admin.email, password: admin.password, first_name: 'Admin', last_name: '' } },
      passwordHash,
    );
    return { created: true, group_id: group.id, admin_user_id: user.id };
  });
}
