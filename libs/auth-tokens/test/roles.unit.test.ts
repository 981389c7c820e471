import { PERMISSIONS, ROLES, permissionsFor, canReadAsset, canEditAsset, canDeleteAsset, requireAny, type Principal } from '../src';

const sorted = (a: readonly string[]) => [...a].sort();

describe('permission table (CONTRACT §2)', () => {
  it('has the role ids', () => {
    expect(ROLES).toEqual({ ADMIN: 1, MANAGER: 2, USER: 3, CREATOR: 4 });
  });

  it('MANAGER', () => {
    expect(sorted(PERMISSIONS.MANAGER)).toEqual(
      sorted(['CREATE_ASSET', 'READ_ASSET', 'EDIT_ASSET', 'DELETE_ASSET', 'MANAGE_SCHEMAS', 'MANAGE_COLLECTIONS', 'VIEW_USAGE', 'RUN_JOBS']),
    );
  });

  it('USER', () => {
    expect(sorted(PERMISSIONS.USER)).toEqual(sorted(['CREATE_ASSET', 'READ_ASSET', 'EDIT_OWN_ASSET', 'DELETE_OWN_ASSET', 'MANAGE_COLLECTIONS', 'RUN_JOBS']));
  });

  it('CREATOR', () => {
    expect(sorted(PERMISSIONS.CREATOR)).toEqual(['CREATE_ASSET', 'READ_OWN_ASSET']);
  });

  it('ADMIN has every token of the others plus the admin ones, and no duplicates', () => {
    expect(sorted(PERMISSIONS.ADMIN)).toEqual(
      sorted([
        'CREATE_ASSET',
        'READ_ASSET',
        'READ_OWN_ASSET',
        'EDIT_ASSET',
        'EDIT_OWN_ASSET',
        'DELETE_ASSET',
        'DELETE_OWN_ASSET',
        'MANAGE_SCHEMAS',
        'MANAGE_COLLECTIONS',
        'VIEW_USAGE',
        'RUN_JOBS',
        'MANAGE_USERS',
        'MANAGE_SETTINGS',
        'PURGE_TRASH',
      ]),
    );
    expect(new Set(PERMISSIONS.ADMIN).size).toBe(PERMISSIONS.ADMIN.length);
  });

  it('permissionsFor accepts names, ids and ASSET_ADMIN', () => {
    expect(sorted(permissionsFor(2))).toEqual(sorted(PERMISSIONS.MANAGER));
    expect(sorted(permissionsFor('CREATOR'))).toEqual(sorted(PERMISSIONS.CREATOR));
    expect(sorted(permissionsFor('ASSET_ADMIN'))).toEqual(sorted([...PERMISSIONS.ADMIN, 'REISSUE_CALLBACKS']));
    expect(permissionsFor('ADMIN')).not.toContain('REISSUE_CALLBACKS');
    expect(permissionsFor(9)).toEqual([]);
  });

  it('returns copies: callers cannot widen the table', () => {
    permissionsFor('CREATOR').push('MANAGE_USERS');
    expect(permissionsFor('CREATOR')).not.toContain('MANAGE_USERS');
  });
});

describe('asset access helpers', () => {
  const p = (role: 'ADMIN' | 'MANAGER' | 'USER' | 'CREATOR'): Principal => ({
    user_id: 7,
    group_id: 1,
    role_id: ROLES[role],
    role_name: role,
    permissions: permissionsFor(role),
    via: 'jwt',
  });

  it('CREATOR reads only its own assets and edits nothing', () => {
    expect(canReadAsset(p('CREATOR'), 7)).toBe(true);
    expect(canReadAsset(p('CREATOR'), 8)).toBe(false);
    expect(canEditAsset(p('CREATOR'), 7)).toBe(false);
    expect(canDeleteAsset(p('CREATOR'), 7)).toBe(false);
  });

  it('USER reads all, edits and deletes its own', () => {
    expect(canReadAsset(p('USER'), 8)).toBe(true);
    expect(canEditAsset(p('USER'), 7)).toBe(true);
    expect(canEditAsset(p('USER'), 8)).toBe(false);
    expect(canDeleteAsset(p('USER'), 8)).toBe(false);
  });

  it('MANAGER edits and deletes every asset', () => {
    expect(canEditAsset(p('MANAGER'), 8)).toBe(true);
    expect(canDeleteAsset(p('MANAGER'), 8)).toBe(true);
  });

  it('requireAny throws FORBIDDEN without a token', () => {
    expect(() => requireAny(p('CREATOR'), ['MANAGE_USERS'])).toThrow(expect.objectContaining({ kind: 'FORBIDDEN' }));
    expect(() => requireAny(p('CREATOR'), ['MANAGE_USERS', 'CREATE_ASSET'])).not.toThrow();
    expect(() => requireAny(p('CREATOR'), [])).not.toThrow();
  });
});
