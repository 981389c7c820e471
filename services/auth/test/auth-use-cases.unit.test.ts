import { hashApiKey, permissionsFor, ROLE_NAMES, type Principal } from '@dam/auth-tokens';
import { AppError, rateLimited } from '@dam/errors';
import type { ApiKeyRecord } from '../src/domain/api-keys';
import type { LoginAttempt } from '../src/domain/login-limiter';
import { hashPassword } from '../src/domain/passwords';
import type { ApiKeys, AuthStore, AuthTx, Notifications, Users } from '../src/domain/ports';
import type { UserRecord } from '../src/domain/users';
import { disableApiKey, mintApiKey } from '../src/use-cases/api-keys.use-case';
import { accessOwner, authenticate } from '../src/use-cases/internal-identity.use-case';
import { login } from '../src/use-cases/login.use-case';
import { deleteUser, updateUser } from '../src/use-cases/manage-users.use-case';

/** auth's rules over in-memory ports: no PostgreSQL. */

interface StoredKey {
  record: ApiKeyRecord;
  hash: string;
  accessId: string;
  revoked: boolean;
}
interface State {
  users: Map<number, UserRecord & { deleted: boolean }>;
  keys: Map<string, StoredKey>;
  messages: Array<{ userId: number; message: string; seen: boolean }>;
}

const notUsed = (): never => {
  throw new Error('not used by these tests');
};

/** The stores over one state; `fail` names a method that throws (a lost connection between two statements). */
function storesOver(state: State, fail: Set<string>): Omit<AuthTx, 'lock'> {
  const check = (name: string) => {
    if (fail.has(name)) throw new Error(`${name} failed`);
  };
  const live = (u: (UserRecord & { deleted: boolean }) | undefined) => (u && !u.deleted ? u : undefined);
  const withUser = (k: StoredKey | undefined) => {
    const user = k && !k.revoked ? live(state.users.get(k.record.user_id)) : undefined;
    return k && user ? { key: k.record, user_role_id: user.role_id, user_disabled: user.disabled } : undefined;
  };
  const users: Users = {
    findAllByEmail: async (email) => [...state.users.values()].filter((u) => !u.deleted && u.email === email),
    findVisible: async (groupId, id) => {
      const u = live(state.users.get(id));
      return u && u.group_id === groupId ? u : undefined;
    },
    update: async (groupId, id, c) => {
      const u = live(state.users.get(id));
      if (!u || u.group_id !== groupId) return undefined;
      Object.assign(u, c.role_id === undefined ? {} : { role_id: c.role_id }, c.disabled === undefined ? {} : { disabled: c.disabled });
      return u;
    },
    softDelete: async (groupId, id) => {
      check('softDelete');
      const u = live(state.users.get(id));
      if (!u || u.group_id !== groupId) return false;
      u.deleted = true;
      return true;
    },
    findByAccessId: async (accessId) => [...state.users.values()].find((u) => !u.deleted && u.access_id === accessId),
    touchLogin: async () => undefined,
    listInGroup: notUsed,
    insert: notUsed,
    rotateAccessId: notUsed,
    findByUploadKey: notUsed,
    rotateUploadKey: notUsed,
    setPreferences: notUsed,
  };
  const apiKeys: ApiKeys = {
    insert: async (k, hash) => {
      const record = { ...k, created_at: new Date(0) };
      state.keys.set(k.id, { record, hash, accessId: `key-${k.id}`, revoked: false });
      return record;
    },
    revoke: async (groupId, id) => {
      const k = state.keys.get(id);
      if (!k || k.revoked || k.record.group_id !== groupId) return undefined;
      k.revoked = true;
      return { user_id: k.record.user_id, name: k.record.name };
    },
    revokeAllOfUser: async (userId) => {
      check('revokeAllOfUser');
      for (const k of state.keys.values()) if (k.record.user_id === userId) k.revoked = true;
    },
    findByHash: async (hash) => withUser([...state.keys.values()].find((k) => k.hash === hash)),
    findByAccessId: async (accessId) => withUser([...state.keys.values()].find((k) => k.accessId === accessId)),
    listActive: notUsed,
    accessIdOf: notUsed,
  };
  const notifications: Notifications = {
    add: async (messages) => void state.messages.push(...messages.map((m) => ({ userId: m.userId, message: m.message, seen: false }))),
    takeUnseen: async (userId) => state.messages.filter((m) => m.userId === userId && !m.seen).map((m) => ((m.seen = true), m.message)),
    recipients: notUsed,
    claimNotice: notUsed,
    prune: notUsed,
  };
  return { users, apiKeys, notifications, groups: { insert: notUsed, count: notUsed }, settings: { get: notUsed, insert: notUsed, replace: notUsed } };
}

/** A transaction works on a copy of the state that replaces it only when the function succeeds. */
function memoryStore(state: State) {
  const fail = new Set<string>();
  const store: AuthStore = {
    ...storesOver(state, fail),
    transaction: async (fn) => {
      const copy: State = structuredClone(state);
      const result = await fn({ ...storesOver(copy, fail), lock: async () => undefined });
      state.users = copy.users;
      state.keys = copy.keys;
      state.messages = copy.messages;
      return result;
    },
  };
  return { store, fail };
}

let passwordHash: string;
beforeAll(async () => {
  passwordHash = await hashPassword('right-password');
});

const user = (id: number, roleId: number, over: Partial<UserRecord> = {}): UserRecord & { deleted: boolean } => ({
  id,
  group_id: 1,
  email: `u${id}@example.com`,
  password_hash: passwordHash,
  first_name: 'U',
  last_name: `${id}`,
  role_id: roleId,
  disabled: false,
  preferences: {},
  upload_key: `upk_${id}`,
  access_id: `acc-${id}`,
  token_epoch: 0,
  created_at: new Date(0),
  updated_at: new Date(0),
  deleted: false,
  ...over,
});

function world() {
  const state: State = {
    users: new Map([
      [1, user(1, 1)],
      [2, user(2, 1)],
      [3, user(3, 3)],
    ]),
    keys: new Map(),
    messages: [],
  };
  return { state, ...memoryStore(state) };
}

const principal = (userId: number, roleId: number, over: Partial<Principal> = {}): Principal => ({
  user_id: userId,
  group_id: 1,
  role_id: roleId,
  role_name: ROLE_NAMES[roleId] ?? 'UNKNOWN',
  permissions: permissionsFor(roleId),
  via: 'jwt',
  ...over,
});
const code = async (p: Promise<unknown>) =>
  p.then(
    () => 'ok',
    (err: unknown) => (err instanceof AppError ? err.code : String(err)),
  );

describe('minting API keys', () => {
  it('only a person signed in with MANAGE_USERS, and never above their own role', async () => {
    const { store } = world();
    // MANAGE_USERS is ADMIN's; a weaker role holding it (a future role) still mints nothing above itself.
    const manager = principal(2, 2, { permissions: [...permissionsFor(2), 'MANAGE_USERS'] });
    expect(await code(mintApiKey(store, manager, { name: 'k', role: 'USER' }))).toBe('ok');
    expect(await code(mintApiKey(store, manager, { name: 'k', role: 'ADMIN' }))).toBe('ROLE_ABOVE_YOUR_OWN');
    expect(await code(mintApiKey(store, manager, { name: 'k', role: 'ASSET_ADMIN' }))).toBe('ROLE_ABOVE_YOUR_OWN');
    expect(await code(mintApiKey(store, principal(1, 1), { name: 'k', role: 'ASSET_ADMIN' }))).toBe('ok');
    expect(await code(mintApiKey(store, principal(1, 1, { via: 'api_key', key_id: 'x' }), { name: 'k', role: 'CREATOR' }))).toBe('API_KEY_CANNOT_MINT');
    expect(await code(mintApiKey(store, principal(3, 3), { name: 'k', role: 'CREATOR' }))).toBe('FORBIDDEN');
  });

  it('a minted key acts as its creator within the key role; revoked by another, the owner is told at login', async () => {
    const { store, state } = world();
    const minted = await mintApiKey(store, principal(2, 1), { name: 'ci', role: 'CREATOR' });
    expect(state.keys.get(minted.key_id)?.hash).toBe(hashApiKey(minted.key));
    expect(await authenticate(store, { api_key: minted.key })).toMatchObject({ user_id: 2, role_id: 4, via: 'api_key', key_id: minted.key_id });
    await disableApiKey(store, principal(1, 1), minted.key_id);
    expect(await code(authenticate(store, { api_key: minted.key }))).toBe('INVALID_API_KEY');
    expect(state.messages).toEqual([{ userId: 2, message: "API key 'ci' was disabled", seen: false }]);
    expect(await code(disableApiKey(store, principal(1, 1), minted.key_id))).toBe('API_KEY_NOT_FOUND');
  });
});

describe('disabling and deleting users', () => {
  it("a disabled user's keys and their links stop, and work again when re-enabled", async () => {
    const { store } = world();
    const minted = await mintApiKey(store, principal(2, 1), { name: 'ci', role: 'USER' });
    await updateUser(store, principal(1, 1), 2, { disabled: true });
    expect(await code(authenticate(store, { api_key: minted.key }))).toBe('INVALID_API_KEY');
    expect(await accessOwner(store, `key-${minted.key_id}`)).toMatchObject({ user_id: 2, active: false });
    expect(await accessOwner(store, 'acc-2')).toMatchObject({ user_id: 2, active: false });
    await updateUser(store, principal(1, 1), 2, { disabled: false });
    expect(await code(authenticate(store, { api_key: minted.key }))).toBe('ok');
    expect(await code(updateUser(store, principal(1, 1), 1, { disabled: true }))).toBe('CANNOT_MODIFY_SELF');
  });

  it('deleting a user revokes their keys in the same transaction: a failed revocation deletes nothing', async () => {
    const { store, state, fail } = world();
    const minted = await mintApiKey(store, principal(2, 1), { name: 'ci', role: 'USER' });
    fail.add('revokeAllOfUser');
    await expect(deleteUser(store, principal(1, 1), 2)).rejects.toThrow('revokeAllOfUser failed');
    expect(state.users.get(2)?.deleted).toBe(false);
    expect(await code(authenticate(store, { api_key: minted.key }))).toBe('ok');
    fail.clear();
    await deleteUser(store, principal(1, 1), 2);
    expect(state.users.get(2)?.deleted).toBe(true);
    expect(state.keys.get(minted.key_id)?.revoked).toBe(true);
    expect(await code(deleteUser(store, principal(1, 1), 2))).toBe('USER_NOT_FOUND');
    expect(await code(deleteUser(store, principal(1, 1), 1))).toBe('CANNOT_MODIFY_SELF');
    expect(await code(deleteUser(store, principal(3, 3), 1))).toBe('FORBIDDEN');
  });
});

describe('login and the guessing bounds', () => {
  /** A limiter whose verdict the test sets: past a bound, an attempt is held and a wrong password answers 429. */
  function limiter(pastBound: boolean) {
    const outcomes: string[] = [];
    const attempt: LoginAttempt = {
      holdMs: pastBound ? 5 : 0,
      succeeded: async () => void outcomes.push('succeeded'),
      failed: () => (outcomes.push('failed'), pastBound ? rateLimited(60, 'Too many failed login attempts; try again later') : undefined),
      abandoned: async () => void outcomes.push('abandoned'),
    };
    return { outcomes, limiter: { begin: async () => attempt } };
  }
  const deps = (store: AuthStore, l: ReturnType<typeof limiter>) => ({
    users: store.users,
    notifications: store.notifications,
    limiter: l.limiter,
    jwtSecret: 's'.repeat(32),
    jwtTtlSeconds: 60,
  });
  const attempt = (store: AuthStore, l: ReturnType<typeof limiter>, email: string, password: string) =>
    login(deps(store, l), { email, password, address: '192.0.2.1' });

  it('a wrong password and an unknown email answer alike; each counts as a failure', async () => {
    const { store } = world();
    const l = limiter(false);
    expect(await code(attempt(store, l, 'u3@example.com', 'wrong'))).toBe('INVALID_CREDENTIALS');
    expect(await code(attempt(store, l, 'nobody@example.com', 'wrong'))).toBe('INVALID_CREDENTIALS');
    expect(l.outcomes).toEqual(['failed', 'failed']);
  });

  it('past a bound a wrong password answers 429 while the right one still logs in, with the messages since the last login', async () => {
    const { store, state } = world();
    state.messages.push({ userId: 3, message: 'job failed', seen: false });
    const l = limiter(true);
    expect(await code(attempt(store, l, 'u3@example.com', 'wrong'))).toBe('RATE_LIMITED');
    const ok = await attempt(store, l, ' U3@Example.com ', 'right-password');
    expect(ok).toMatchObject({ user_id: 3, role_id: 3, notifications: ['job failed'] });
    expect(l.outcomes).toEqual(['failed', 'succeeded']);
    expect((await attempt(store, l, 'u3@example.com', 'right-password')).notifications).toEqual([]);
  });

  it('tells a disabled account only to the right password; a store failure does not count the attempt', async () => {
    const { store, state } = world();
    (state.users.get(3) as UserRecord).disabled = true;
    const l = limiter(false);
    expect(await code(attempt(store, l, 'u3@example.com', 'wrong'))).toBe('INVALID_CREDENTIALS');
    expect(await code(attempt(store, l, 'u3@example.com', 'right-password'))).toBe('ACCOUNT_DISABLED');
    const broken = { ...store, users: { ...store.users, findAllByEmail: () => Promise.reject(new Error('database down')) } };
    expect(await code(attempt(broken, l, 'u3@example.com', 'right-password'))).toBe('Error: database down');
    expect(l.outcomes).toEqual(['failed', 'succeeded', 'abandoned']);
  });
});
