import { withTransaction, type Pool, type PoolClient } from '@dam/db';
import type { AuthStore, AuthTx } from '../domain/ports';
import { ApiKeyRepository } from './api-key.repository';
import { GroupRepository } from './group.repository';
import { NotificationRepository } from './notification.repository';
import { SettingsRepository } from './settings.repository';
import { UserRepository } from './user.repository';

const storesOn = (db: Pool | PoolClient) => ({
  users: new UserRepository(db),
  apiKeys: new ApiKeyRepository(db),
  groups: new GroupRepository(db),
  settings: new SettingsRepository(db),
  notifications: new NotificationRepository(db),
});

/** auth's PostgreSQL records: the repositories on the pool, and the same on one connection per transaction. */
export function pgAuthStore(pool: Pool): AuthStore {
  return {
    ...storesOn(pool),
    transaction: <T>(fn: (tx: AuthTx) => Promise<T>) =>
      withTransaction(pool, (client) =>
        fn({
          ...storesOn(client),
          lock: async (key) => {
            await client.query('SELECT pg_advisory_xact_lock($1)', [key]);
          },
        }),
      ),
  };
}
