import type { FormErrors } from './form-errors';

/**
 * Users and API keys in the browser with the API's rules and words (services/auth/src/http: users.routes.ts,
 * api-keys.routes.ts, schemas.ts), so a form says what the API would before sending it; the API still decides
 * (its 400 `details` land next to the same fields). test/accounts.unit.test.ts holds the two to the same messages.
 */
export const ROLES = [
  { id: 1, name: 'ADMIN' },
  { id: 2, name: 'MANAGER' },
  { id: 3, name: 'USER' },
  { id: 4, name: 'CREATOR' },
] as const;
export type RoleId = (typeof ROLES)[number]['id'];
export const KEY_ROLES = ['ADMIN', 'MANAGER', 'USER', 'CREATOR', 'ASSET_ADMIN'] as const;
export type KeyRole = (typeof KEY_ROLES)[number];

export const roleIdOf = (name: string): RoleId | undefined => ROLES.find((r) => r.name === name)?.id;

/** A key is never stronger than its creator's role (403 ROLE_ABOVE_YOUR_OWN); lower ids are stronger, ASSET_ADMIN acts as ADMIN. */
export function keyRolesFor(roleName: string): KeyRole[] {
  const mine = roleIdOf(roleName);
  if (mine === undefined) return [];
  return KEY_ROLES.filter((k) => (k === 'ASSET_ADMIN' ? 1 : (roleIdOf(k) ?? 0)) >= mine);
}

// zod 4's email pattern (z.email()), which the API applies.
const EMAIL = /^(?!\.)(?!.*\.\.)([A-Za-z0-9_'+\-.]*)[A-Za-z0-9_+-]@([A-Za-z0-9][A-Za-z0-9-]*\.)+[A-Za-z]{2,}$/;
const tooBig = (n: number) => `Too big: expected string to have <=${n} characters`;
const tooSmall = (n: number) => `Too small: expected string to have >=${n} characters`;

function passwordProblem(password: string): string | undefined {
  if (password.length < 8) return 'must be at least 8 characters';
  if (password.length > 1024) return tooBig(1024);
  return undefined;
}

export interface NewUser {
  email: string;
  password: string;
  first_name: string;
  last_name: string;
  role_id: number | undefined;
}
export const USER_FIELDS = ['email', 'password', 'first_name', 'last_name', 'role_id'] as const;
export type UserField = (typeof USER_FIELDS)[number];

export function validateNewUser(u: NewUser): FormErrors<UserField> {
  const fields: Partial<Record<UserField, string>> = {};
  const email = [EMAIL.test(u.email) ? undefined : 'Invalid email address', u.email.length > 320 ? tooBig(320) : undefined].filter(Boolean).join('; ');
  if (email) fields.email = email;
  const pw = passwordProblem(u.password);
  if (pw) fields.password = pw;
  if (u.first_name.trim().length > 100) fields.first_name = tooBig(100);
  if (u.last_name.trim().length > 100) fields.last_name = tooBig(100);
  if (!ROLES.some((r) => r.id === u.role_id)) fields.role_id = 'must be 1 (ADMIN), 2 (MANAGER), 3 (USER) or 4 (CREATOR)';
  return { fields };
}

/** Create User's body: the names trimmed as the API keeps them. */
export const newUserBody = (u: NewUser & { role_id: RoleId }) => ({
  email: u.email,
  password: u.password,
  first_name: u.first_name.trim(),
  last_name: u.last_name.trim(),
  role_id: u.role_id,
});

export const validatePassword = (password: string): FormErrors<'password'> => {
  const pw = passwordProblem(password);
  return { fields: pw ? { password: pw } : {} };
};

export const KEY_FIELDS = ['name', 'role'] as const;
export type KeyField = (typeof KEY_FIELDS)[number];

export function validateNewKey(k: { name: string; role: string }): FormErrors<KeyField> {
  const fields: Partial<Record<KeyField, string>> = {};
  const name = k.name.trim();
  if (name.length < 1) fields.name = tooSmall(1);
  else if (name.length > 200) fields.name = tooBig(200);
  if (!(KEY_ROLES as readonly string[]).includes(k.role)) fields.role = `Invalid option: expected one of ${KEY_ROLES.map((r) => `"${r}"`).join('|')}`;
  return { fields };
}

/** "Page 2 of 5" for a list answer (`{page, page_size, total}`), at least one page. */
export const pageCount = (total: number, pageSize: number): number => Math.max(1, Math.ceil(total / Math.max(1, pageSize)));
