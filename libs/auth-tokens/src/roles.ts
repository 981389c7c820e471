/** Roles and permission tokens (CONTRACT §2). The table is the single source every service reads. */
export const ROLES = { ADMIN: 1, MANAGER: 2, USER: 3, CREATOR: 4 } as const;

export type RoleName = keyof typeof ROLES;
export type RoleId = (typeof ROLES)[RoleName];

export const ROLE_NAMES: Record<number, RoleName> = { 1: 'ADMIN', 2: 'MANAGER', 3: 'USER', 4: 'CREATOR' };

export const PERMISSION = {
  CREATE_ASSET: 'CREATE_ASSET',
  READ_ASSET: 'READ_ASSET',
  READ_OWN_ASSET: 'READ_OWN_ASSET',
  EDIT_ASSET: 'EDIT_ASSET',
  EDIT_OWN_ASSET: 'EDIT_OWN_ASSET',
  DELETE_ASSET: 'DELETE_ASSET',
  DELETE_OWN_ASSET: 'DELETE_OWN_ASSET',
  MANAGE_SCHEMAS: 'MANAGE_SCHEMAS',
  MANAGE_COLLECTIONS: 'MANAGE_COLLECTIONS',
  VIEW_USAGE: 'VIEW_USAGE',
  RUN_JOBS: 'RUN_JOBS',
  MANAGE_USERS: 'MANAGE_USERS',
  MANAGE_SETTINGS: 'MANAGE_SETTINGS',
  PURGE_TRASH: 'PURGE_TRASH',
  /** Only API keys of role ASSET_ADMIN carry it (spec endpoint 18). */
  REISSUE_CALLBACKS: 'REISSUE_CALLBACKS',
} as const;

export type Permission = (typeof PERMISSION)[keyof typeof PERMISSION];

const P = PERMISSION;
const MANAGER: Permission[] = [P.CREATE_ASSET, P.READ_ASSET, P.EDIT_ASSET, P.DELETE_ASSET, P.MANAGE_SCHEMAS, P.MANAGE_COLLECTIONS, P.VIEW_USAGE, P.RUN_JOBS];
const USER: Permission[] = [P.CREATE_ASSET, P.READ_ASSET, P.EDIT_OWN_ASSET, P.DELETE_OWN_ASSET, P.MANAGE_COLLECTIONS, P.RUN_JOBS];
const CREATOR: Permission[] = [P.CREATE_ASSET, P.READ_OWN_ASSET];
// "every token below, plus ..." — the union of the other roles, then the admin-only tokens.
const ADMIN: Permission[] = [...new Set([...MANAGER, ...USER, ...CREATOR, P.MANAGE_USERS, P.MANAGE_SETTINGS, P.PURGE_TRASH])];

export const PERMISSIONS: Readonly<Record<RoleName, readonly Permission[]>> = Object.freeze({
  ADMIN: Object.freeze(ADMIN),
  MANAGER: Object.freeze(MANAGER),
  USER: Object.freeze(USER),
  CREATOR: Object.freeze(CREATOR),
});

export const API_KEY_ROLES = ['ADMIN', 'MANAGER', 'USER', 'CREATOR', 'ASSET_ADMIN'] as const;
export type ApiKeyRole = (typeof API_KEY_ROLES)[number];

export const isRoleId = (n: unknown): n is RoleId => n === 1 || n === 2 || n === 3 || n === 4;

/** Tokens of a role (by name or id) or of an API key role; unknown roles get none. */
export function permissionsFor(role: RoleName | ApiKeyRole | number): Permission[] {
  if (role === 'ASSET_ADMIN') return [...ADMIN, P.REISSUE_CALLBACKS];
  const name = typeof role === 'number' ? ROLE_NAMES[role] : role;
  return name ? [...PERMISSIONS[name]] : [];
}

/** The user role an API key role acts with (ASSET_ADMIN acts as ADMIN). */
export function roleIdOfKeyRole(role: ApiKeyRole): RoleId {
  return role === 'ASSET_ADMIN' ? ROLES.ADMIN : ROLES[role];
}
