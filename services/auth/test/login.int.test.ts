import { verifyJwt } from '@dam/auth-tokens';
import { scaled } from '@dam/testing';
import { ADMIN, JWT_SECRET, asService, call, migratedPool, principalHeaders, startAuth, type TestAuth } from './harness';
import { pgAuthStore } from '../src/adapters/pg-store';
import { bootstrap } from '../src/use-cases/bootstrap.use-case';

describe('bootstrap', () => {
  it('creates group 1 and its ADMIN once, even when starts race', async () => {
    const pool = await migratedPool();
    try {
      const results = await Promise.all([bootstrap(pgAuthStore(pool), ADMIN), bootstrap(pgAuthStore(pool), ADMIN), bootstrap(pgAuthStore(pool), ADMIN)]);
      expect(results.filter((r) => r.created)).toHaveLength(1);
      expect(await bootstrap(pgAuthStore(pool), ADMIN)).toEqual({ created: false });
      const groups = await pool.query('SELECT id FROM groups');
      expect(groups.rows).toEqual([{ id: 1 }]);
      const users = await pool.query('SELECT id, group_id, role_id, email FROM users');
      expect(users.rows).toEqual([{ id: 1, group_id: 1, role_id: 1, email: 'admin@example.com' }]);
      expect((await pool.query('SELECT count(*)::int AS n FROM settings WHERE group_id = 1')).rows[0].n).toBe(1);
    } finally {
      await pool.end();
    }
  });
});

describe('POST /api/v1/login', () => {
  let auth: TestAuth;
  beforeAll(async () => {
    auth = await startAuth({ windowSeconds: 600 });
  });
  afterAll(async () => auth.close());

  const login = (body: unknown, headers: Record<string, string> = {}) => call(`${auth.url}/api/v1/login`, 'POST', body, headers);

  it('answers the login result with every field and type', async () => {
    const res = await login(ADMIN);
    expect(res.status).toBe(200);
    const b = res.body;
    expect(Object.keys(b).sort()).toEqual(
      ['accessID', 'jwt', 'notifications', 'permissions', 'preferences', 'role_id', 'role_name', 'uploadkey', 'user_email', 'user_id', 'username'].sort(),
    );
    expect(b).toMatchObject({ user_id: 1, user_email: 'admin@example.com', role_id: 1, role_name: 'ADMIN', notifications: [], preferences: {} });
    expect(Number.isInteger(b.user_id)).toBe(true);
    expect(typeof b.username).toBe('string');
    expect(b.permissions).toEqual(expect.arrayContaining(['MANAGE_USERS', 'READ_ASSET', 'PURGE_TRASH']));
    expect(typeof b.uploadkey).toBe('string');
    expect(b.uploadkey.length).toBeGreaterThan(10);
    expect(typeof b.accessID).toBe('string');
    expect(verifyJwt(b.jwt, JWT_SECRET)).toMatchObject({ sub: 1, gid: 1, role: 1 });
    // Stable per user across logins.
    const again = await login({ email: 'ADMIN@example.com', password: ADMIN.password });
    expect(again.status).toBe(200);
    expect(again.body.uploadkey).toBe(b.uploadkey);
    expect(again.body.accessID).toBe(b.accessID);
    expect(again.body.jwt).not.toBe(b.jwt);
  });

  it('wrong password and unknown email answer the same 401', async () => {
    const wrong = await login({ email: ADMIN.email, password: 'not-the-password' }, { 'x-forwarded-for': '10.0.0.1' });
    const unknown = await login({ email: 'nobody@example.com', password: 'whatever1' }, { 'x-forwarded-for': '10.0.0.1' });
    expect(wrong.status).toBe(401);
    expect(unknown.status).toBe(401);
    expect(wrong.body).toEqual(unknown.body);
    expect(wrong.body.error.code).toBe('INVALID_CREDENTIALS');
  });

  it('malformed JSON → 400 INVALID_JSON; missing fields → 400 with details', async () => {
    const bad = await login('{"email": ', {});
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('INVALID_JSON');
    const missing = await login({ email: ADMIN.email });
    expect(missing.status).toBe(400);
    expect(missing.body.error.code).toBe('VALIDATION_FAILED');
    expect(missing.body.error.details).toEqual([expect.objectContaining({ path: 'password' })]);
  });

  it('a disabled user answers 403, an enabled one 200', async () => {
    const admin = principalHeaders(1, 1, 1);
    const created = await call(
      `${auth.url}/api/v1/users`,
      'POST',
      {
        email: 'dis@example.com',
        password: 'password-1',
        first_name: 'Dee',
        last_name: 'Abled',
        role_id: 3,
      },
      admin,
    );
    expect(created.status).toBe(201);
    expect((await login({ email: 'dis@example.com', password: 'password-1' })).body.username).toBe('Dee Abled');
    const patched = await call(`${auth.url}/api/v1/users/${created.body.user_id}`, 'PATCH', { disabled: true }, admin);
    expect(patched.status).toBe(200);
    const res = await login({ email: 'dis@example.com', password: 'password-1' });
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('ACCOUNT_DISABLED');
  });

  it("slows a guesser's address without locking out the account: the right password from another address works", async () => {
    const created = await call(
      `${auth.url}/api/v1/users`,
      'POST',
      {
        email: 'limited@example.com',
        password: 'password-1',
        role_id: 4,
      },
      principalHeaders(1, 1, 1),
    );
    expect(created.status).toBe(201);
    const attacker = asService({ caller: 'gateway', clientAddress: '203.0.113.66' });
    const owner = asService({ caller: 'gateway', clientAddress: '198.51.100.7' });
    const statuses: number[] = [];
    for (let i = 0; i < 6; i += 1) {
      statuses.push((await call(`${auth.url}/api/v1/login`, 'POST', { email: 'limited@example.com', password: 'wrong-pass' }, attacker)).status);
    }
    // Three free failures, then the attacker must wait (even with the right password, from its address).
    expect(statuses).toEqual([401, 401, 401, 429, 429, 429]);
    const blocked = await call(`${auth.url}/api/v1/login`, 'POST', { email: 'limited@example.com', password: 'password-1' }, attacker);
    expect(blocked.status).toBe(429);
    expect(blocked.body.error.code).toBe('RATE_LIMITED');
    expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(0);
    // The owner, from elsewhere, logs in.
    expect((await call(`${auth.url}/api/v1/login`, 'POST', { email: 'limited@example.com', password: 'password-1' }, owner)).status).toBe(200);
  });
});

describe('login guessing, with the limiter at its configured defaults and a clock the test moves', () => {
  let auth: TestAuth;
  let now = Date.parse('2026-01-01T00:00:00Z');
  beforeAll(async () => {
    // The defaults of config.ts: 3 free failures, delays capped at 900 s, 100 per email and 50 per address in 900 s.
    auth = await startAuth({ maxPerEmail: 100, maxPerAddress: 50, windowSeconds: 900, freeFailures: 3, maxDelaySeconds: 900 }, { now: () => now });
  });
  afterAll(async () => auth.close());

  const from = (clientAddress: string) => asService({ caller: 'gateway', clientAddress });
  const login = (email: string, password: string, clientAddress: string) => call(`${auth.url}/api/v1/login`, 'POST', { email, password }, from(clientAddress));
  const createUser = async (email: string, roleId = 3) => {
    const res = await call(`${auth.url}/api/v1/users`, 'POST', { email, password: 'right-password', role_id: roleId }, principalHeaders(1, 1, 1));
    expect(res.status).toBe(201);
  };

  it('an attacker failing more often than the old lockout (10) never keeps the ADMIN out, and waits ever longer', async () => {
    // The old rule locked an email for everyone after ten failures: any stranger could lock out the admin.
    const attacker = '203.0.113.7';
    const retryAfters: number[] = [];
    let failures = 0;
    while (failures < 15) {
      const res = await login(ADMIN.email, `guess-${failures}`, attacker);
      if (res.status === 401) {
        failures += 1;
        continue;
      }
      expect(res.status).toBe(429);
      expect(res.body).toEqual({ error: { code: 'RATE_LIMITED', message: expect.any(String) } });
      const wait = Number(res.headers.get('retry-after'));
      retryAfters.push(wait);
      // Even the right password waits: the delay is not a way to test guesses for free.
      expect((await login(ADMIN.email, ADMIN.password, attacker)).status).toBe(429);
      now += wait * 1000;
    }
    // Three free failures, then 1 s, 2 s, 4 s... doubling with each further failure, up to the cap; waiting out the
    // longest delay earns no fresh free tries.
    expect(retryAfters).toEqual([1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 900, 900]);
    // The admin, from their own address, is not held back at all.
    const owner = await login(ADMIN.email, ADMIN.password, '198.51.100.23');
    expect(owner.status).toBe(200);
    expect(owner.body.role_id).toBe(1);
  });

  it('a burst of parallel guesses gets no more tries than guesses one after another', async () => {
    await createUser('burst@example.com');
    const statuses = await Promise.all(Array.from({ length: 8 }, (_, i) => login('burst@example.com', `guess-${i}`, '192.0.2.55')));
    const counts = statuses.reduce<Record<number, number>>((acc, r) => ({ ...acc, [r.status]: (acc[r.status] ?? 0) + 1 }), {});
    expect(counts).toEqual({ 401: 3, 429: 5 });
    expect((await login('burst@example.com', 'right-password', '192.0.2.56')).status).toBe(200);
  });

  it('an IPv6 client rotating through its /64 is one client', async () => {
    await createUser('six@example.com');
    const statuses: number[] = [];
    for (let i = 1; i <= 5; i += 1) statuses.push((await login('six@example.com', 'wrong-password', `2001:db8:42:7::${i}`)).status);
    expect(statuses).toEqual([401, 401, 401, 429, 429]);
    expect((await login('six@example.com', 'right-password', '2001:db8:42:8::1')).status).toBe(200);
  });
});

describe('login bounds strangers share (an address, an email) hold logins but never refuse the right password', () => {
  let auth: TestAuth;
  const hold = scaled(300);
  beforeAll(async () => {
    auth = await startAuth({ maxPerEmail: 5, maxPerAddress: 5, windowSeconds: 900, freeFailures: 3, boundDelayMs: hold });
  });
  afterAll(async () => auth.close());

  const login = (email: string, password: string, clientAddress: string) =>
    call(`${auth.url}/api/v1/login`, 'POST', { email, password }, asService({ caller: 'gateway', clientAddress }));

  it('after both bounds are spent with wrong passwords, the right password logs in; a wrong one answers 429 after the hold', async () => {
    const created = await call(
      `${auth.url}/api/v1/users`,
      'POST',
      { email: 'shared@example.com', password: 'right-password', role_id: 3 },
      principalHeaders(1, 1, 1),
    );
    expect(created.status).toBe(201);
    // Behind one ingress or NAT (the shared address), strangers spend its bound on any emails...
    const shared = '198.51.100.200';
    for (let i = 0; i < 5; i += 1) expect((await login(`nobody-${i}@example.com`, 'wrong-pass', shared)).status).toBe(401);
    // ...and the account's own bound from elsewhere, one failure per address (no pair is delayed).
    for (let i = 0; i < 5; i += 1) expect((await login('shared@example.com', 'wrong-pass', `203.0.113.${i + 10}`)).status).toBe(401);

    // Both bounds are spent for this (email, address): the right password still logs in (it answered 429 before).
    const started = Date.now();
    const right = await login('shared@example.com', 'right-password', shared);
    expect(right.status).toBe(200);
    expect(right.body.user_email).toBe('shared@example.com');
    expect(Date.now() - started).toBeGreaterThanOrEqual(hold - 5);
    // From any other address too.
    expect((await login('shared@example.com', 'right-password', '192.0.2.77')).status).toBe(200);

    // A wrong password past a bound is held as long, then answers 429 with Retry-After: no faster verdict than a right one.
    const wrongStarted = Date.now();
    const wrong = await login('shared@example.com', 'wrong-again', '192.0.2.78');
    expect(Date.now() - wrongStarted).toBeGreaterThanOrEqual(hold - 5);
    expect(wrong.status).toBe(429);
    expect(wrong.body).toEqual({ error: { code: 'RATE_LIMITED', message: expect.any(String) } });
    expect(Number(wrong.headers.get('retry-after'))).toBeGreaterThan(0);
    // Another email from the shared address: its right password logs in as well.
    expect((await login(ADMIN.email, ADMIN.password, shared)).status).toBe(200);
  });
});
