import { createSchemas as createKeySchemas } from '../../../services/auth/src/http/api-keys.routes';
import { createSchemas as createUserSchemas, patchSchemas } from '../../../services/auth/src/http/users.routes';
import { API_KEY_ROLES, PERMISSIONS, ROLES as API_ROLES, roleIdOfKeyRole } from '../../../libs/auth-tokens/src';
import { KEY_ROLES, keyRolesFor, ROLES, newUserBody, pageCount, validateNewKey, validateNewUser, validatePassword, type NewUser } from '../src/lib/accounts';
import { formErrors } from '../src/lib/form-errors';
import { mayUse, navFor, PAGES } from '../src/lib/nav';

/** The messages zod gives per field, as the API's 400 details carry them (path → messages joined by '; '). */
function apiMessages(result: { success: boolean; error?: { issues: { path: PropertyKey[]; message: string }[] } }): Record<string, string> {
  const out: Record<string, string> = {};
  for (const i of result.error?.issues ?? []) {
    const k = i.path.map(String).join('.');
    out[k] = out[k] ? `${out[k]}; ${i.message}` : i.message;
  }
  return out;
}

describe('the console checks users and keys with the API rules and words', () => {
  const base: NewUser = { email: 'maria@example.com', password: 'correct-horse', first_name: 'Maria', last_name: 'Lopez', role_id: 3 };
  const users: NewUser[] = [
    base,
    { ...base, email: '' },
    { ...base, email: 'not-an-email' },
    { ...base, email: 'a..b@example.com' },
    { ...base, email: '.a@example.com' },
    { ...base, email: 'a@example' },
    { ...base, email: `${'a'.repeat(320)}@b.co` },
    { ...base, email: "o'neil+tag@mail.example.org" },
    { ...base, password: 'short' },
    { ...base, password: '' },
    { ...base, password: 'p'.repeat(1025) },
    { ...base, first_name: 'f'.repeat(101) },
    { ...base, last_name: `  ${'l'.repeat(100)}  ` },
    { ...base, role_id: 7 },
    { ...base, role_id: undefined },
    { email: 'x', password: 'y', first_name: 'z'.repeat(200), last_name: '', role_id: 0 },
  ];

  it.each(users.map((u, i) => [i, u] as const))('new user #%i: the same fields and messages as Create User', (_i, u) => {
    expect(validateNewUser(u).fields).toEqual(apiMessages(createUserSchemas.body.safeParse(u)));
  });

  it('sends the names trimmed, as the API keeps them', () => {
    expect(newUserBody({ ...base, first_name: '  Ana ', last_name: ' B ', role_id: 2 })).toEqual({ ...base, first_name: 'Ana', last_name: 'B', role_id: 2 });
  });

  it.each(['', 'short', 'eight888', 'p'.repeat(1024), 'p'.repeat(1025)])('a new password %#: as the user PATCH says', (password) => {
    expect(validatePassword(password).fields).toEqual(apiMessages(patchSchemas.body.safeParse({ password })));
  });

  it.each([
    { name: 'ci-pipeline', role: 'USER' },
    { name: '   ', role: 'USER' },
    { name: '', role: 'ROOT' },
    { name: 'n'.repeat(201), role: 'ASSET_ADMIN' },
    { name: ` ${'n'.repeat(200)} `, role: 'CREATOR' },
  ])('a new API key $role: the same fields and messages as Create API key', (k) => {
    expect(validateNewKey(k).fields).toEqual(apiMessages(createKeySchemas.body.safeParse(k)));
  });

  it('knows the roles and key roles the API knows', () => {
    expect(Object.fromEntries(ROLES.map((r) => [r.name, r.id]))).toEqual(API_ROLES);
    expect([...KEY_ROLES]).toEqual([...API_KEY_ROLES]);
    for (const r of ROLES) expect(keyRolesFor(r.name)).toEqual(API_KEY_ROLES.filter((k) => roleIdOfKeyRole(k) >= r.id));
  });

  it('offers key roles no stronger than the signed-in role (ASSET_ADMIN acts as ADMIN)', () => {
    expect(keyRolesFor('ADMIN')).toEqual([...KEY_ROLES]);
    expect(keyRolesFor('MANAGER')).toEqual(['MANAGER', 'USER', 'CREATOR']);
    expect(keyRolesFor('USER')).toEqual(['USER', 'CREATOR']);
    expect(keyRolesFor('CREATOR')).toEqual(['CREATOR']);
    expect(keyRolesFor('NOBODY')).toEqual([]);
  });

  it('counts pages of a list', () => {
    expect(pageCount(0, 25)).toBe(1);
    expect(pageCount(25, 25)).toBe(1);
    expect(pageCount(26, 25)).toBe(2);
  });
});

describe('the API error next to its field', () => {
  const fields = ['email', 'password', 'role_id'] as const;

  it('puts each detail next to the field its path names, in the API words', () => {
    const error = {
      error: {
        code: 'VALIDATION_FAILED',
        message: 'The request is invalid',
        details: [
          { path: 'email', message: 'Invalid email address' },
          { path: 'password', message: 'must be at least 8 characters' },
          { path: 'email', message: 'Too big: expected string to have <=320 characters' },
        ],
      },
    };
    expect(formErrors(error, fields)).toEqual({
      fields: { email: 'Invalid email address; Too big: expected string to have <=320 characters', password: 'must be at least 8 characters' },
    });
  });

  it('puts a code about one field next to it, and what belongs to no field under the form', () => {
    const taken = { error: { code: 'EMAIL_TAKEN', message: 'A user with this email already exists' } };
    expect(formErrors(taken, fields, { EMAIL_TAKEN: 'email' })).toEqual({ fields: { email: 'A user with this email already exists (EMAIL_TAKEN)' } });
    expect(formErrors(taken, fields)).toEqual({ fields: {}, general: 'A user with this email already exists (EMAIL_TAKEN)' });
    const mixed = {
      error: {
        code: 'VALIDATION_FAILED',
        message: 'The request is invalid',
        details: [
          { path: 'email', message: 'bad' },
          { path: 'extra', message: 'unknown' },
        ],
      },
    };
    expect(formErrors(mixed, fields)).toEqual({ fields: { email: 'bad' }, general: 'The request is invalid (VALIDATION_FAILED): extra: unknown' });
    expect(formErrors(new Error('Failed to fetch'), fields)).toEqual({ fields: {}, general: 'Failed to fetch' });
    expect(formErrors(undefined, fields)).toEqual({ fields: {}, general: 'The request failed' });
  });
});

describe('navigation by permission', () => {
  // Collections, Settings, Schemas, Usage and Webhooks are other pages' (their own tests say who sees them); these are the rest, in order.
  const labels = (role: keyof typeof PERMISSIONS) =>
    navFor(PERMISSIONS[role])
      .map((p) => p.label)
      .filter((l) => !['Collections', 'Settings', 'Schemas', 'Usage', 'Webhooks'].includes(l));

  it('offers each role the pages it may use, in one order', () => {
    expect(labels('ADMIN')).toEqual(['Assets', 'Upload', 'Jobs', 'Trash', 'Users', 'API keys']);
    for (const role of ['MANAGER', 'USER', 'CREATOR'] as const) expect(labels(role)).toEqual(['Assets', 'Upload', 'Jobs', 'API keys']);
  });

  it('refuses the address of a page the role may not use, and lets other routes through', () => {
    expect(mayUse('users', PERMISSIONS.USER)).toBe(false);
    expect(mayUse('trash', PERMISSIONS.MANAGER)).toBe(false);
    expect(mayUse('users', PERMISSIONS.ADMIN)).toBe(true);
    expect(mayUse('asset', [])).toBe(true);
    expect(mayUse('not-found', [])).toBe(true);
  });

  it('asks for a permission token that exists', () => {
    const tokens = new Set(Object.values(PERMISSIONS).flat());
    for (const p of PAGES) for (const t of p.anyOf) expect(tokens).toContain(t);
  });
});
