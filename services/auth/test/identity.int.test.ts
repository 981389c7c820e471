import { signJwt } from '@dam/auth-tokens';
import jwt from 'jsonwebtoken';
import { parseSigningKey, permissionsFor } from '@dam/auth-tokens';
import { ADMIN, JWT_SECRET, asService, call, identities, knownAssets, principalHeaders, startAuth, unsigned, type TestAuth } from './harness';

const ADMIN_PRINCIPAL = { user_id: 1, group_id: 1, role_id: 1, role_name: 'ADMIN', permissions: permissionsFor(1), via: 'jwt' as const };

let auth: TestAuth;
beforeAll(async () => {
  auth = await startAuth();
});
afterAll(async () => auth.close());

const admin1 = () => principalHeaders(1, 1, 1);

describe('accessID: whose links, and rotation', () => {
  it('tells link-signing whose accessID it is; a rotated one is unknown at once, and only link-signing may ask', async () => {
    const u = await call(`${auth.url}/api/v1/users`, 'POST', { email: 'links@example.com', password: 'password-1', role_id: 3 }, admin1());
    expect(u.status).toBe(201);
    const me = principalHeaders(u.body.user_id, 1, 3);
    const status = await call(`${auth.url}/internal/v1/groups/1/users/${u.body.user_id}/status`, 'GET', undefined, asService({ caller: 'gateway' }));
    const first = status.body.access_id as string;
    // link-signing asks for the caller's accessID, not a user's status (the edges' route).
    expect(
      (await call(`${auth.url}/internal/v1/groups/1/users/${u.body.user_id}/status`, 'GET', undefined, asService({ caller: 'link-signing' }))).status,
    ).toBe(403);
    const owner = await call(`${auth.url}/internal/v1/access/${first}`, 'GET', undefined, asService({ caller: 'link-signing' }));
    expect(owner).toMatchObject({ status: 200, body: { user_id: u.body.user_id, group_id: 1, role_id: 3, active: true } });
    expect((await call(`${auth.url}/internal/v1/access/${first}`, 'GET', undefined, asService({ caller: 'gateway' }))).status).toBe(403);

    const rotated = await call(`${auth.url}/api/v1/users/me/access_id`, 'POST', undefined, me);
    expect(rotated).toMatchObject({ status: 200, body: { user_id: u.body.user_id, accessID: expect.stringMatching(/^[0-9a-f]{32}$/) } });
    expect(rotated.body.accessID).not.toBe(first);
    expect((await call(`${auth.url}/internal/v1/access/${first}`, 'GET', undefined, asService({ caller: 'link-signing' }))).status).toBe(404);
    // Another user's needs MANAGE_USERS.
    expect((await call(`${auth.url}/api/v1/users/1/access_id`, 'POST', undefined, me)).status).toBe(403);
    const byAdmin = await call(`${auth.url}/api/v1/users/${u.body.user_id}/access_id`, 'POST', undefined, admin1());
    expect(byAdmin.status).toBe(200);
    expect(byAdmin.body.accessID).not.toBe(rotated.body.accessID);
    expect((await call(`${auth.url}/api/v1/users/999/access_id`, 'POST', undefined, admin1())).status).toBe(404);
  });
});

describe("the accessID of an API key's links (security review F17)", () => {
  const linkSigning = (principal?: Parameters<typeof principalHeaders>[3] & { user_id?: number; role_id?: number }) =>
    principal === undefined
      ? asService({ caller: 'link-signing' })
      : asService({ caller: 'link-signing', principal: { ...ADMIN_PRINCIPAL, ...principal } as typeof ADMIN_PRINCIPAL });
  const ownerOf = (accessId: string) => call(`${auth.url}/internal/v1/access/${accessId}`, 'GET', undefined, linkSigning());
  const accessIdOf = (principal: Parameters<typeof linkSigning>[0]) => call(`${auth.url}/internal/v1/access_id`, 'GET', undefined, linkSigning(principal));

  it("gives a key's links the key's own accessID, which revoking the key (or rotating the user's) ends", async () => {
    const user = await call(`${auth.url}/api/v1/users`, 'POST', { email: 'keylinks@example.com', password: 'password-1', role_id: 1 }, admin1());
    const id = user.body.user_id as number;
    const me = principalHeaders(id, 1, 1);
    const made = await call(`${auth.url}/api/v1/api_keys`, 'POST', { name: 'links', role: 'CREATOR' }, me);
    expect(made.status).toBe(201);
    const other = await call(`${auth.url}/api/v1/api_keys`, 'POST', { name: 'other', role: 'USER' }, me);
    const asKey = (keyId: string, keyRole: 'CREATOR' | 'USER') => ({
      user_id: id,
      role_id: keyRole === 'CREATOR' ? 4 : 3,
      via: 'api_key' as const,
      key_id: keyId,
      key_role: keyRole,
    });

    // Signed in: the user's accessID, as before.
    const userAccess = (await call(`${auth.url}/internal/v1/groups/1/users/${id}/status`, 'GET')).body.access_id as string;
    expect((await accessIdOf({ user_id: id, role_id: 1, via: 'jwt' })).body).toEqual({ access_id: userAccess });
    // With a key: the key's own, of the same form, acting as the key (CREATOR) at the edge.
    const keyAccess = (await accessIdOf(asKey(made.body.key_id, 'CREATOR'))).body.access_id as string;
    expect(keyAccess).toMatch(/^[0-9a-f]{32}$/);
    expect(keyAccess).not.toBe(userAccess);
    expect(await ownerOf(keyAccess)).toMatchObject({ status: 200, body: { user_id: id, group_id: 1, role_id: 4, active: true } });
    const otherAccess = (await accessIdOf(asKey(other.body.key_id, 'USER'))).body.access_id as string;
    expect(otherAccess).not.toBe(keyAccess);
    // Only link-signing asks, and only for a user.
    expect((await call(`${auth.url}/internal/v1/access_id`, 'GET', undefined, asService({ caller: 'gateway', principal: ADMIN_PRINCIPAL }))).status).toBe(403);
    expect((await call(`${auth.url}/internal/v1/access_id`, 'GET', undefined, linkSigning())).status).toBe(401);

    // Revoking the key ends its links (the edge answers 403 to an unknown accessID), not the user's nor the other key's.
    expect((await call(`${auth.url}/api/v1/api_keys/${made.body.key_id}`, 'DELETE', undefined, admin1())).status).toBe(200);
    expect((await ownerOf(keyAccess)).status).toBe(404);
    expect((await accessIdOf(asKey(made.body.key_id, 'CREATOR'))).status).toBe(404);
    expect((await ownerOf(userAccess)).status).toBe(200);
    expect((await ownerOf(otherAccess)).status).toBe(200);

    // Disabling the user marks the key's links inactive; rotating the user's accessID ends the keys' links too.
    expect((await call(`${auth.url}/api/v1/users/${id}`, 'PATCH', { disabled: true }, admin1())).status).toBe(200);
    expect((await ownerOf(otherAccess)).body.active).toBe(false);
    expect((await call(`${auth.url}/api/v1/users/${id}`, 'PATCH', { disabled: false }, admin1())).status).toBe(200);
    expect((await call(`${auth.url}/api/v1/users/me/access_id`, 'POST', undefined, me)).status).toBe(200);
    expect((await ownerOf(otherAccess)).status).toBe(404);
    const renewed = (await accessIdOf(asKey(other.body.key_id, 'USER'))).body.access_id as string;
    expect(renewed).not.toBe(otherAccess);
    expect(await ownerOf(renewed)).toMatchObject({ status: 200, body: { user_id: id, role_id: 3, active: true } });
  });
});

describe('GET|POST /api/v1/auth/validate', () => {
  it('accepts the JWT as a Bearer header or as _jwt, with both methods', async () => {
    const { body } = await call(`${auth.url}/api/v1/login`, 'POST', ADMIN);
    const jwt: string = body.jwt;
    const expected = { valid: true, user_id: 1, group_id: 1, role_id: 1, expires_at: expect.any(String) };
    for (const method of ['GET', 'POST']) {
      const viaHeader = await call(`${auth.url}/api/v1/auth/validate`, method, undefined, { authorization: `Bearer ${jwt}` });
      expect(viaHeader).toMatchObject({ status: 200, body: expected });
      const viaQuery = await call(`${auth.url}/api/v1/auth/validate?_jwt=${encodeURIComponent(jwt)}`, method);
      expect(viaQuery).toMatchObject({ status: 200, body: expected });
      expect(Date.parse(viaQuery.body.expires_at)).toBeGreaterThan(Date.now());
    }
  });

  it('missing, tampered, expired or foreign-secret tokens → 401', async () => {
    expect((await call(`${auth.url}/api/v1/auth/validate`, 'GET')).status).toBe(401);
    expect((await call(`${auth.url}/api/v1/auth/validate?_jwt=abc`, 'POST')).status).toBe(401);
    const foreign = signJwt({ sub: 1, gid: 1, role: 1 }, 'some-other-secret-123456', 60).token;
    expect((await call(`${auth.url}/api/v1/auth/validate`, 'GET', undefined, { authorization: `Bearer ${foreign}` })).status).toBe(401);
    const unknownUser = signJwt({ sub: 999, gid: 1, role: 1 }, JWT_SECRET, 60).token;
    expect((await call(`${auth.url}/api/v1/auth/validate`, 'GET', undefined, { authorization: `Bearer ${unknownUser}` })).status).toBe(401);
  });

  it('revokes tokens on a password change and on disabling; validate answers the current role', async () => {
    const u = await call(`${auth.url}/api/v1/users`, 'POST', { email: 'ep@example.com', password: 'password-1', role_id: 2 }, admin1());
    const first = (await call(`${auth.url}/api/v1/login`, 'POST', { email: 'ep@example.com', password: 'password-1' })).body.jwt as string;
    const validate = (t: string) => call(`${auth.url}/api/v1/auth/validate`, 'GET', undefined, { authorization: `Bearer ${t}` });
    // Demoted: the old token is still valid, with the role the user has now.
    await call(`${auth.url}/api/v1/users/${u.body.user_id}`, 'PATCH', { role_id: 4 }, admin1());
    expect((await validate(first)).body).toMatchObject({ valid: true, role_id: 4 });
    // A new password ends every token signed before it.
    await call(`${auth.url}/api/v1/users/${u.body.user_id}`, 'PATCH', { password: 'password-2' }, admin1());
    const revoked = await validate(first);
    expect(revoked.status).toBe(401);
    expect(revoked.body.error.code).toBe('TOKEN_REVOKED');
    const status = await call(`${auth.url}/internal/v1/groups/1/users/${u.body.user_id}/status`, 'GET');
    expect(status.body).toEqual({ active: true, role_id: 4, token_epoch: 1, access_id: expect.stringMatching(/^[0-9a-f]{32}$/) });
    const second = (await call(`${auth.url}/api/v1/login`, 'POST', { email: 'ep@example.com', password: 'password-2' })).body.jwt as string;
    expect((await validate(second)).status).toBe(200);
    // Disabling, then enabling again, does not bring the earlier token back.
    await call(`${auth.url}/api/v1/users/${u.body.user_id}`, 'PATCH', { disabled: true }, admin1());
    await call(`${auth.url}/api/v1/users/${u.body.user_id}`, 'PATCH', { disabled: false }, admin1());
    expect((await validate(second)).body.error.code).toBe('TOKEN_REVOKED');
  });

  it('a disabled user → 403', async () => {
    const u = await call(`${auth.url}/api/v1/users`, 'POST', { email: 'v@example.com', password: 'password-1', role_id: 3 }, admin1());
    const { body } = await call(`${auth.url}/api/v1/login`, 'POST', { email: 'v@example.com', password: 'password-1' });
    await call(`${auth.url}/api/v1/users/${u.body.user_id}`, 'PATCH', { disabled: true }, admin1());
    expect((await call(`${auth.url}/api/v1/auth/validate`, 'GET', undefined, { authorization: `Bearer ${body.jwt}` })).status).toBe(403);
  });
});

describe('users', () => {
  it("needs the gateway's token for a user", async () => {
    expect((await call(`${auth.url}/api/v1/users`, 'GET')).status).toBe(401);
    expect((await call(`${auth.url}/api/v1/users`, 'GET', undefined, unsigned())).status).toBe(401);
    // A trusted service that is not the gateway cannot speak for a user, not even an ADMIN of group 1.
    const viaConversion = asService({ caller: 'conversion', principal: { ...ADMIN_PRINCIPAL } });
    expect((await call(`${auth.url}/api/v1/users`, 'GET', undefined, viaConversion)).status).toBe(403);
  });

  it('creates, lists, reads, updates and deletes users of the group', async () => {
    const created = await call(
      `${auth.url}/api/v1/users`,
      'POST',
      {
        email: 'Mia@Example.com',
        password: 'password-1',
        first_name: 'Mia',
        last_name: 'Manager',
        role_id: 2,
      },
      admin1(),
    );
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      user_id: expect.any(Number),
      email: 'mia@example.com',
      username: 'Mia Manager',
      first_name: 'Mia',
      last_name: 'Manager',
      role_id: 2,
      role_name: 'MANAGER',
      disabled: false,
      created_at: expect.any(String),
    });
    const dup = await call(`${auth.url}/api/v1/users`, 'POST', { email: 'mia@example.com', password: 'password-1', role_id: 3 }, admin1());
    expect(dup.status).toBe(409);
    const invalid = await call(`${auth.url}/api/v1/users`, 'POST', { email: 'nope', password: 'x', role_id: 7 }, admin1());
    expect(invalid.status).toBe(400);
    expect(invalid.body.error.details.map((d: { path: string }) => d.path).sort()).toEqual(['email', 'password', 'role_id']);

    const list = await call(`${auth.url}/api/v1/users?page=1&page_size=2`, 'GET', undefined, admin1());
    expect(list.status).toBe(200);
    expect(list.body).toMatchObject({ page: 1, page_size: 2, total: expect.any(Number) });
    expect(list.body.items.length).toBeLessThanOrEqual(2);
    expect(list.body.items[0]).not.toHaveProperty('password_hash');

    const id = created.body.user_id;
    const patched = await call(`${auth.url}/api/v1/users/${id}`, 'PATCH', { role_id: 3 }, admin1());
    expect(patched.body.role_name).toBe('USER');
    // The manager is no ADMIN: MANAGE_USERS routes refuse it, its own record is readable.
    const asMia = principalHeaders(id, 1, 2);
    expect((await call(`${auth.url}/api/v1/users`, 'GET', undefined, asMia)).status).toBe(403);
    expect((await call(`${auth.url}/api/v1/users/${id}`, 'GET', undefined, asMia)).status).toBe(200);
    const me = await call(`${auth.url}/api/v1/users/me`, 'GET', undefined, asMia);
    expect(me.body).toMatchObject({ user_id: id, group_id: 1, preferences: {} });

    const prefs = await call(`${auth.url}/api/v1/users/me/preferences`, 'PATCH', { theme: 'dark' }, asMia);
    expect(prefs.body).toEqual({ preferences: { theme: 'dark' } });
    const big = await call(`${auth.url}/api/v1/users/me/preferences`, 'PATCH', { blob: 'x'.repeat(5000) }, asMia);
    expect(big.status).toBe(413);

    expect((await call(`${auth.url}/api/v1/users/1`, 'PATCH', { disabled: true }, admin1())).status).toBe(409);
    expect((await call(`${auth.url}/api/v1/users/${id}`, 'DELETE', undefined, admin1())).status).toBe(200);
    expect((await call(`${auth.url}/api/v1/users/${id}`, 'GET', undefined, admin1())).status).toBe(404);
    expect((await call(`${auth.url}/api/v1/login`, 'POST', { email: 'mia@example.com', password: 'password-1' })).status).toBe(401);
  });
});

describe('upload keys (CONTRACT §12)', () => {
  it('authenticate an upload key as its user with CREATE_ASSET alone; rotation makes the old one 401 at once', async () => {
    const login = await call(`${auth.url}/api/v1/login`, 'POST', ADMIN);
    const key = login.body.uploadkey as string;
    const p = await call(`${auth.url}/internal/v1/authenticate`, 'POST', { upload_key: key });
    expect(p.status).toBe(200);
    expect(p.body).toEqual({ user_id: 1, group_id: 1, role_id: 1, role_name: 'ADMIN', permissions: ['CREATE_ASSET'], via: 'upload_key' });

    const rotated = await call(`${auth.url}/api/v1/users/me/uploadkey`, 'POST', undefined, admin1());
    expect(rotated.status).toBe(200);
    expect(Object.keys(rotated.body)).toEqual(['uploadkey']);
    expect(rotated.body.uploadkey).not.toBe(key);
    expect((await call(`${auth.url}/internal/v1/authenticate`, 'POST', { upload_key: key })).status).toBe(401);
    expect((await call(`${auth.url}/internal/v1/authenticate`, 'POST', { upload_key: rotated.body.uploadkey })).body.via).toBe('upload_key');
    // The next login answers the new key; a request naming both kinds of key, or neither, is refused.
    expect((await call(`${auth.url}/api/v1/login`, 'POST', ADMIN)).body.uploadkey).toBe(rotated.body.uploadkey);
    expect((await call(`${auth.url}/internal/v1/authenticate`, 'POST', { upload_key: key, api_key: 'dam_x' })).status).toBe(400);
    expect((await call(`${auth.url}/internal/v1/authenticate`, 'POST', {})).status).toBe(400);
  });

  it('refuses the upload key of a disabled user', async () => {
    const created = await call(
      `${auth.url}/api/v1/users`,
      'POST',
      { email: 'upk@example.com', password: 'password-1', first_name: 'U', last_name: 'K', role_id: 4 },
      admin1(),
    );
    expect(created.status).toBe(201);
    const key = (await call(`${auth.url}/api/v1/login`, 'POST', { email: 'upk@example.com', password: 'password-1' })).body.uploadkey as string;
    expect((await call(`${auth.url}/internal/v1/authenticate`, 'POST', { upload_key: key })).body).toMatchObject({
      role_name: 'CREATOR',
      permissions: ['CREATE_ASSET'],
    });
    expect((await call(`${auth.url}/api/v1/users/${created.body.user_id}`, 'PATCH', { disabled: true }, admin1())).status).toBe(200);
    expect((await call(`${auth.url}/internal/v1/authenticate`, 'POST', { upload_key: key })).status).toBe(401);
  });
});

describe('credentials that end with the password (security review F17)', () => {
  const authenticate = (uploadKey: string) => call(`${auth.url}/internal/v1/authenticate`, 'POST', { upload_key: uploadKey });

  it('a password change, or disabling, ends the upload key; the next login answers a new one', async () => {
    const created = await call(`${auth.url}/api/v1/users`, 'POST', { email: 'rekey@example.com', password: 'password-1', role_id: 3 }, admin1());
    expect(created.status).toBe(201);
    const id = created.body.user_id as number;
    const first = (await call(`${auth.url}/api/v1/login`, 'POST', { email: 'rekey@example.com', password: 'password-1' })).body.uploadkey as string;
    expect((await authenticate(first)).status).toBe(200);
    // A role change ends nothing.
    expect((await call(`${auth.url}/api/v1/users/${id}`, 'PATCH', { role_id: 4 }, admin1())).status).toBe(200);
    expect((await authenticate(first)).status).toBe(200);

    expect((await call(`${auth.url}/api/v1/users/${id}`, 'PATCH', { password: 'password-2' }, admin1())).status).toBe(200);
    const afterChange = await authenticate(first);
    expect(afterChange.status).toBe(401);
    expect(afterChange.body.error.code).toBe('INVALID_UPLOAD_KEY');
    const second = (await call(`${auth.url}/api/v1/login`, 'POST', { email: 'rekey@example.com', password: 'password-2' })).body.uploadkey as string;
    expect(second).not.toBe(first);
    expect((await authenticate(second)).body).toMatchObject({ user_id: id, via: 'upload_key' });

    // Disabling ends it too, so enabling again does not bring it back.
    expect((await call(`${auth.url}/api/v1/users/${id}`, 'PATCH', { disabled: true }, admin1())).status).toBe(200);
    expect((await call(`${auth.url}/api/v1/users/${id}`, 'PATCH', { disabled: false }, admin1())).status).toBe(200);
    expect((await authenticate(second)).status).toBe(401);
    const third = (await call(`${auth.url}/api/v1/login`, 'POST', { email: 'rekey@example.com', password: 'password-2' })).body.uploadkey as string;
    expect((await authenticate(third)).status).toBe(200);
  });

  it("no API key, whatever its role, rotates its user's upload key or accessID (that would end all their links); a session does", async () => {
    const created = await call(`${auth.url}/api/v1/users`, 'POST', { email: 'keyrot@example.com', password: 'password-1', role_id: 3 }, admin1());
    const id = created.body.user_id as number;
    const before = (await call(`${auth.url}/internal/v1/groups/1/users/${id}/status`, 'GET')).body.access_id as string;
    const uploadKey = (await call(`${auth.url}/api/v1/login`, 'POST', { email: 'keyrot@example.com', password: 'password-1' })).body.uploadkey as string;
    const keys = [
      principalHeaders(id, 1, 4, { via: 'api_key', key_id: 'k-creator', key_role: 'CREATOR' }),
      principalHeaders(id, 1, 3, { via: 'api_key', key_id: 'k-user', key_role: 'USER' }),
      principalHeaders(1, 1, 1, { via: 'api_key', key_id: 'k-admin', key_role: 'ADMIN' }),
    ];
    for (const viaKey of keys) {
      const admin = viaKey === keys[2];
      for (const path of ['/api/v1/users/me/uploadkey', '/api/v1/users/me/access_id', `/api/v1/users/${admin ? 1 : id}/access_id`]) {
        const refused = await call(`${auth.url}${path}`, 'POST', undefined, viaKey);
        // `/users/{id}/access_id` needs MANAGE_USERS first (the route table): only the ADMIN key reaches the rotation rule.
        const code = path.endsWith(`/${id}/access_id`) ? 'FORBIDDEN' : 'API_KEY_CANNOT_ROTATE';
        expect({ path, status: refused.status, code: refused.body.error?.code }).toEqual({ path, status: 403, code });
      }
    }
    // Nothing was rotated.
    expect((await call(`${auth.url}/internal/v1/access/${before}`, 'GET', undefined, asService({ caller: 'link-signing' }))).status).toBe(200);
    expect((await authenticate(uploadKey)).status).toBe(200);
    // An ADMIN key may still rotate another user's accessID (MANAGE_USERS: it could disable that user anyway).
    expect((await call(`${auth.url}/api/v1/users/${id}/access_id`, 'POST', undefined, keys[2])).status).toBe(200);
    // The user, signed in, rotates both.
    const session = principalHeaders(id, 1, 3);
    expect((await call(`${auth.url}/api/v1/users/me/uploadkey`, 'POST', undefined, session)).status).toBe(200);
    expect((await call(`${auth.url}/api/v1/users/me/access_id`, 'POST', undefined, session)).status).toBe(200);
    expect((await authenticate(uploadKey)).status).toBe(401);
  });
});

describe('API keys', () => {
  it('create → authenticate as the creator limited to the key role → revoke → 401', async () => {
    const created = await call(`${auth.url}/api/v1/api_keys`, 'POST', { name: 'ci', role: 'CREATOR' }, admin1());
    expect(created.status).toBe(201);
    expect(created.body).toEqual({ key_id: expect.any(String), name: 'ci', role: 'CREATOR', key: expect.stringMatching(/^dam_/) });
    const stored = await auth.pool.query('SELECT key_hash FROM api_keys WHERE id = $1', [created.body.key_id]);
    expect(stored.rows[0].key_hash).not.toContain(created.body.key);

    const principal = await call(`${auth.url}/internal/v1/authenticate`, 'POST', { api_key: created.body.key });
    expect(principal.status).toBe(200);
    expect(principal.body).toEqual({
      user_id: 1,
      group_id: 1,
      role_id: 4,
      role_name: 'CREATOR',
      permissions: ['CREATE_ASSET', 'READ_OWN_ASSET'],
      via: 'api_key',
      key_id: created.body.key_id,
      key_role: 'CREATOR',
    });

    const list = await call(`${auth.url}/api/v1/api_keys`, 'GET', undefined, admin1());
    expect(list.body.items).toEqual(expect.arrayContaining([expect.objectContaining({ key_id: created.body.key_id, name: 'ci' })]));
    expect(JSON.stringify(list.body)).not.toContain(created.body.key);

    expect((await call(`${auth.url}/api/v1/api_keys/${created.body.key_id}`, 'DELETE', undefined, admin1())).status).toBe(200);
    expect((await call(`${auth.url}/internal/v1/authenticate`, 'POST', { api_key: created.body.key })).status).toBe(401);
    expect((await call(`${auth.url}/api/v1/api_keys/${created.body.key_id}`, 'DELETE', undefined, admin1())).status).toBe(404);
    expect((await call(`${auth.url}/internal/v1/authenticate`, 'POST', { api_key: 'dam_unknown' })).status).toBe(401);
  });

  it('ASSET_ADMIN keys carry REISSUE_CALLBACKS; a CREATOR cannot create keys; bad roles → 400', async () => {
    const created = await call(`${auth.url}/api/v1/api_keys`, 'POST', { name: 'ops', role: 'ASSET_ADMIN' }, admin1());
    const p = await call(`${auth.url}/internal/v1/authenticate`, 'POST', { api_key: created.body.key });
    expect(p.body).toMatchObject({ role_id: 1, role_name: 'ADMIN', key_role: 'ASSET_ADMIN' });
    expect(p.body.permissions).toContain('REISSUE_CALLBACKS');
    expect((await call(`${auth.url}/api/v1/api_keys`, 'POST', { name: 'x', role: 'CREATOR' }, principalHeaders(1, 1, 4))).status).toBe(403);
    expect((await call(`${auth.url}/api/v1/api_keys`, 'POST', { name: 'x', role: 'ROOT' }, admin1())).status).toBe(400);
  });

  it("mints keys only for a signed-in user, never from a key and never above the minter's role", async () => {
    // An ADMIN API key (it has MANAGE_USERS) may not mint, neither a weaker nor a stronger key.
    const viaKey = principalHeaders(1, 1, 1, { via: 'api_key', key_id: 'k-admin', key_role: 'ADMIN' });
    for (const role of ['CREATOR', 'ASSET_ADMIN']) {
      const refused = await call(`${auth.url}/api/v1/api_keys`, 'POST', { name: 'from-key', role }, viaKey);
      expect({ role, status: refused.status, code: refused.body.error?.code }).toEqual({ role, status: 403, code: 'API_KEY_CANNOT_MINT' });
    }
    // A principal holding MANAGE_USERS with a weaker role (forged or future roles) cannot mint above it.
    const manager = principalHeaders(1, 1, 2, { permissions: [...permissionsFor(2), 'MANAGE_USERS'] });
    const above = await call(`${auth.url}/api/v1/api_keys`, 'POST', { name: 'up', role: 'ADMIN' }, manager);
    expect(above.status).toBe(403);
    expect(above.body.error.code).toBe('ROLE_ABOVE_YOUR_OWN');
    expect((await call(`${auth.url}/api/v1/api_keys`, 'POST', { name: 'same', role: 'MANAGER' }, manager)).status).toBe(201);
  });
});

describe('groups, isolation and settings', () => {
  it("does not tell a tenant's admin that an email exists in another tenant", async () => {
    const other = await call(
      `${auth.url}/api/v1/groups`,
      'POST',
      {
        name: 'Other',
        admin: { email: 'owner@other.test', password: 'password-9', first_name: 'O', last_name: 'W' },
      },
      admin1(),
    );
    expect(other.status).toBe(201);
    const otherAdmin = principalHeaders(other.body.admin_user_id, other.body.group_id, 1);
    // mia@example.com and admin@example.com exist in group 1: group 2's admin can create them all the same.
    const same = await call(`${auth.url}/api/v1/users`, 'POST', { email: 'admin@example.com', password: 'other-pass-1', role_id: 3 }, otherAdmin);
    expect(same.status).toBe(201);
    // Within one group an email stays unique.
    const dup = await call(`${auth.url}/api/v1/users`, 'POST', { email: 'ADMIN@example.com', password: 'x-password-1', role_id: 3 }, otherAdmin);
    expect(dup.status).toBe(409);
    // The password picks the account at login.
    const asOther = await call(`${auth.url}/api/v1/login`, 'POST', { email: 'admin@example.com', password: 'other-pass-1' });
    expect(asOther.body).toMatchObject({ user_id: same.body.user_id, role_id: 3 });
    const asFirst = await call(`${auth.url}/api/v1/login`, 'POST', ADMIN);
    expect(asFirst.body).toMatchObject({ user_id: 1, role_id: 1 });
  });

  it('the ADMIN of group 1 creates a group with default settings; groups see nothing of each other', async () => {
    const res = await call(
      `${auth.url}/api/v1/groups`,
      'POST',
      {
        name: 'Acme',
        admin: { email: 'boss@acme.test', password: 'password-2', first_name: 'Bo', last_name: 'Ss' },
      },
      admin1(),
    );
    expect(res.status).toBe(201);
    expect(res.body).toEqual({ group_id: expect.any(Number), name: 'Acme', admin_user_id: expect.any(Number) });
    const { group_id: gid, admin_user_id: aid } = res.body;
    expect(gid).not.toBe(1);

    const login = await call(`${auth.url}/api/v1/login`, 'POST', { email: 'boss@acme.test', password: 'password-2' });
    expect(login.body).toMatchObject({ user_id: aid, role_id: 1 });

    const acme = principalHeaders(aid, gid, 1);
    // Another group's admin cannot create groups, nor see group 1's users.
    expect((await call(`${auth.url}/api/v1/groups`, 'POST', { name: 'X', admin: { email: 'x@x.test', password: 'password-3' } }, acme)).status).toBe(403);
    expect((await call(`${auth.url}/api/v1/users/1`, 'GET', undefined, acme)).status).toBe(404);
    expect((await call(`${auth.url}/api/v1/users/1`, 'PATCH', { disabled: true }, acme)).status).toBe(404);
    const users = await call(`${auth.url}/api/v1/users`, 'GET', undefined, acme);
    expect(users.body.items.map((u: { user_id: number }) => u.user_id)).toEqual([aid]);
    expect(users.body.total).toBe(1);
    // A group 1 key is invisible to Acme.
    const key = await call(`${auth.url}/api/v1/api_keys`, 'POST', { name: 'g1', role: 'USER' }, admin1());
    expect((await call(`${auth.url}/api/v1/api_keys/${key.body.key_id}`, 'DELETE', undefined, acme)).status).toBe(404);

    const settings = await call(`${auth.url}/api/v1/settings`, 'GET', undefined, acme);
    expect(settings.status).toBe(200);
    expect(settings.body).toEqual({
      webhooks: { urls: [], secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{32}$/) },
      conversions: {
        custom: { thumb: { width: 200, height: 200, fit: 'cover', format: 'webp', quality: 80 } },
        profile: { image: ['thumb'], video: [] },
        watermark_asset_id: null,
      },
      addons: { auto: { image: [], video: [] } },
      bulk_delete: { max_assets: 1000, max_range_days: 31, export: false },
      metadata: { keep_gps: false },
    });
    const g1 = await call(`${auth.url}/api/v1/settings`, 'GET', undefined, admin1());
    expect(g1.body.webhooks.secret).not.toBe(settings.body.webhooks.secret);
    const conversion = asService({ caller: 'conversion' });
    const internal = await call(`${auth.url}/internal/v1/groups/${gid}/settings`, 'GET', undefined, conversion);
    // Only the webhook service signs deliveries: the other readers get no webhook secret (nor URLs).
    const { webhooks, ...rest } = settings.body;
    expect(internal.body).toEqual(rest);
    for (const caller of ['transcode', 'metadata']) {
      const other = await call(`${auth.url}/internal/v1/groups/${gid}/settings`, 'GET', undefined, asService({ caller }));
      expect(other.status).toBe(200);
      expect(JSON.stringify(other.body)).not.toContain(webhooks.secret);
      expect(other.body).toEqual(rest);
    }
    const webhook = await call(`${auth.url}/internal/v1/groups/${gid}/settings`, 'GET', undefined, asService({ caller: 'webhook' }));
    expect(webhook.body).toEqual(settings.body);
    expect((await call(`${auth.url}/internal/v1/groups/9999/settings`, 'GET', undefined, conversion)).status).toBe(404);
  });

  it('PATCH settings validates, merges and rotates the secret; only MANAGE_SETTINGS', async () => {
    const before = (await call(`${auth.url}/api/v1/settings`, 'GET', undefined, admin1())).body;
    const bad = await call(
      `${auth.url}/api/v1/settings`,
      'PATCH',
      {
        webhooks: { urls: ['ftp://x'] },
        conversions: { custom: { 'bad name': { width: 10 } } },
        bulk_delete: { max_assets: 0 },
        metadata: { keep_gps: 'yes' },
      },
      admin1(),
    );
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('VALIDATION_FAILED');
    expect(bad.body.error.details.length).toBeGreaterThanOrEqual(4);
    const unknownProfile = await call(`${auth.url}/api/v1/settings`, 'PATCH', { conversions: { profile: { image: ['nope'] } } }, admin1());
    expect(unknownProfile.status).toBe(400);

    const ok = await call(
      `${auth.url}/api/v1/settings`,
      'PATCH',
      {
        webhooks: { urls: ['https://hooks.example.com/a'], rotate_secret: true },
        conversions: { custom: { thumb: { width: 100, height: 100 }, big: { width: 2000 } }, profile: { image: ['thumb', 'big', 'smart_imaging'] } },
        bulk_delete: { max_range_days: 7 },
        metadata: { keep_gps: true },
      },
      admin1(),
    );
    expect(ok.status).toBe(200);
    expect(ok.body.metadata).toEqual({ keep_gps: true });
    expect(ok.body.webhooks.urls).toEqual(['https://hooks.example.com/a']);
    expect(ok.body.webhooks.secret).not.toBe(before.webhooks.secret);
    expect(ok.body.conversions.custom.big).toEqual({ width: 2000, fit: 'cover', format: 'webp', quality: 80 });
    expect(ok.body.conversions.profile).toEqual({ image: ['thumb', 'big', 'smart_imaging'], video: [] });
    expect(ok.body.bulk_delete).toEqual({ max_assets: 1000, max_range_days: 7, export: false });
    expect((await call(`${auth.url}/api/v1/settings`, 'GET', undefined, admin1())).body).toEqual(ok.body);

    expect((await call(`${auth.url}/api/v1/settings`, 'PATCH', {}, principalHeaders(1, 1, 2))).status).toBe(403);
    expect((await call(`${auth.url}/api/v1/settings`, 'GET', undefined, principalHeaders(1, 1, 3))).status).toBe(403);
  });

  it('refuses webhook URLs into the network and a watermark asset of another group', async () => {
    const patch = (body: unknown) => call(`${auth.url}/api/v1/settings`, 'PATCH', body, admin1());
    for (const url of ['https://169.254.169.254/latest/meta-data', 'https://10.0.0.5/hook', 'http://hooks.example.com/plain', 'https://localhost/x']) {
      const res = await patch({ webhooks: { urls: ['https://hooks.example.com/ok', url] } });
      expect({ url, status: res.status, details: res.body.error?.details }).toEqual({
        url,
        status: 400,
        details: [{ path: 'webhooks.urls.1', message: expect.any(String) }],
      });
    }
    // WEBHOOK_ALLOW_HOSTS (127.0.0.1 here) may be named, over plain http too.
    expect((await patch({ webhooks: { urls: ['http://127.0.0.1:9999/hook'] } })).status).toBe(200);

    const mine = 'A'.repeat(32);
    const theirs = 'B'.repeat(32);
    knownAssets.set(1, new Set([mine]));
    knownAssets.set(3, new Set([theirs]));
    const foreign = await patch({ conversions: { watermark_asset_id: theirs } });
    expect(foreign.status).toBe(400);
    expect(foreign.body.error.details).toEqual([{ path: 'conversions.watermark_asset_id', message: expect.any(String) }]);
    const own = await patch({ conversions: { watermark_asset_id: mine } });
    expect(own.status).toBe(200);
    expect(own.body.conversions.watermark_asset_id).toBe(mine);
  });

  it('unknown routes → 404 contract body', async () => {
    const res = await call(`${auth.url}/nothing`, 'GET');
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('ROUTE_NOT_FOUND');
  });
});

describe('service identity', () => {
  let auth: TestAuth;
  beforeAll(async () => {
    auth = await startAuth();
  });
  afterAll(async () => auth.close());

  const settingsPath = '/internal/v1/groups/1/settings';
  const get = (path: string, headers: Record<string, string> = {}) => fetch(`${auth.url}${path}`, { headers });

  it('answers no internal route without a service token (settings hold the webhook secret)', async () => {
    for (const path of [settingsPath, '/internal/v1/groups/1/users/1/status']) {
      const res = await get(path);
      expect(res.status).toBe(401);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('SERVICE_TOKEN_REQUIRED');
    }
    const key = await fetch(`${auth.url}/internal/v1/authenticate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ api_key: 'dam_guess' }),
    });
    expect(key.status).toBe(401);
  });

  it('refuses a replayed, stale or wrong-audience token, and a service the route does not list', async () => {
    const token = identities.signer('conversion').sign({ audience: 'auth', method: 'GET', path: settingsPath });
    expect((await get(settingsPath, { 'x-dam-service-token': token })).status).toBe(200);
    expect((await get(settingsPath, { 'x-dam-service-token': token })).status).toBe(401); // replayed
    const forMetadata = identities.signer('conversion').sign({ audience: 'metadata', method: 'GET', path: settingsPath });
    expect((await get(settingsPath, { 'x-dam-service-token': forMetadata })).status).toBe(401);
    const otherPath = identities.signer('conversion').sign({ audience: 'auth', method: 'GET', path: '/internal/v1/groups/2/settings' });
    expect((await get(settingsPath, { 'x-dam-service-token': otherPath })).status).toBe(401);
    const key = parseSigningKey(identities.privateKey('conversion'));
    const stale = jwt.sign({ htm: 'GET', htu: settingsPath, jti: 'stale-1', iat: Math.floor(Date.now() / 1000) - 120 }, key.privateKey, {
      algorithm: 'ES256',
      header: { alg: 'ES256', kid: key.kid, typ: 'dam-call+jwt' },
      issuer: 'conversion',
      audience: 'auth',
      expiresIn: 60,
    });
    expect((await get(settingsPath, { 'x-dam-service-token': stale })).status).toBe(401);
    // The gateway is trusted, but the settings route lists only the workers that apply them.
    const viaGateway = await get(settingsPath, identities.headers('gateway', { audience: 'auth', method: 'GET', path: settingsPath }));
    expect(viaGateway.status).toBe(403);
  });
});
