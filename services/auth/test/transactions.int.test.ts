import { waitFor } from '@dam/testing';
import { asService, call, principalHeaders, startAuth, type TestAuth } from './harness';

/** Writes that belong together commit together (issue 32, "one transaction where two writes belong together"). */

let auth: TestAuth;
beforeAll(async () => {
  auth = await startAuth();
});
afterAll(async () => auth.close());

const admin1 = () => principalHeaders(1, 1, 1);

/** A second ADMIN of group 1 (API keys are minted with MANAGE_USERS) with a key it minted. */
async function managerWithKey(email: string): Promise<{ userId: number; key: string }> {
  const u = await call(`${auth.url}/api/v1/users`, 'POST', { email, password: 'password-1', role_id: 1 }, admin1());
  expect(u.status).toBe(201);
  const made = await call(`${auth.url}/api/v1/api_keys`, 'POST', { name: 'ci', role: 'USER' }, principalHeaders(u.body.user_id, 1, 1));
  expect(made.status).toBe(201);
  return { userId: u.body.user_id, key: made.body.key };
}

const authenticate = (key: string) => call(`${auth.url}/internal/v1/authenticate`, 'POST', { api_key: key }, asService({ caller: 'gateway' }));

describe('deleting a user', () => {
  it('soft-deletes the user and revokes their keys together: a failed revocation leaves the user as it was', async () => {
    const { userId, key } = await managerWithKey('deleted-with-keys@example.com');
    // The revocation fails (as a lost connection or a lock timeout would between the two statements).
    await auth.pool.query(`CREATE FUNCTION refuse_key_update() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'keys unavailable'; END $$`);
    await auth.pool.query('CREATE TRIGGER refuse_key_update BEFORE UPDATE ON api_keys FOR EACH ROW EXECUTE FUNCTION refuse_key_update()');
    try {
      expect((await call(`${auth.url}/api/v1/users/${userId}`, 'DELETE', undefined, admin1())).status).toBe(500);
      // Before, the user stayed deleted (404 here, and 404 to a retry) while the key was still unrevoked.
      expect(await call(`${auth.url}/api/v1/users/${userId}`, 'GET', undefined, admin1())).toMatchObject({
        status: 200,
        body: { user_id: userId, disabled: false },
      });
      expect((await authenticate(key)).status).toBe(200);
    } finally {
      await auth.pool.query('DROP TRIGGER refuse_key_update ON api_keys');
      await auth.pool.query('DROP FUNCTION refuse_key_update()');
    }
    // The retry does both.
    expect((await call(`${auth.url}/api/v1/users/${userId}`, 'DELETE', undefined, admin1())).status).toBe(200);
    expect((await call(`${auth.url}/api/v1/users/${userId}`, 'GET', undefined, admin1())).status).toBe(404);
    expect((await authenticate(key)).status).toBe(401);
    const keys = await auth.pool.query<{ revoked: boolean }>('SELECT revoked_at IS NOT NULL AS revoked FROM api_keys WHERE user_id = $1', [userId]);
    expect(keys.rows).toEqual([{ revoked: true }]);
  });
});

describe('preferences', () => {
  it('two merges at once each keep the other one’s members (read and written under the row lock)', async () => {
    const u = await call(`${auth.url}/api/v1/users`, 'POST', { email: 'prefs@example.com', password: 'password-1', role_id: 3 }, admin1());
    const me = () => principalHeaders(u.body.user_id, 1, 3);
    expect((await call(`${auth.url}/api/v1/users/me/preferences`, 'PATCH', { theme: 'dark' }, me())).status).toBe(200);
    // Another writer holds the row: both merges start while it does, and go on when it commits.
    const holder = await auth.pool.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM users WHERE id = $1 FOR UPDATE', [u.body.user_id]);
      const first = call(`${auth.url}/api/v1/users/me/preferences`, 'PATCH', { language: 'pt' }, me());
      const second = call(`${auth.url}/api/v1/users/me/preferences`, 'PATCH', { grid: 'large' }, me());
      // Both wait on the row (before: each had read the old preferences and waited to write its own merge).
      await waitFor(
        async () => {
          const waiting = await auth.pool.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query ILIKE '%users%'`,
          );
          return waiting.rows[0]?.n === 2;
        },
        { timeoutMs: 10_000, intervalMs: 20, description: 'both merges waiting on the row' },
      );
      await holder.query('COMMIT');
      expect((await first).status).toBe(200);
      expect((await second).status).toBe(200);
    } finally {
      holder.release();
    }
    const after = await call(`${auth.url}/api/v1/users/me`, 'GET', undefined, me());
    expect(after.body.preferences).toEqual({ theme: 'dark', language: 'pt', grid: 'large' });
  });
});
