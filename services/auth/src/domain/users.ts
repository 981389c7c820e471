import { ROLE_NAMES } from '@dam/auth-tokens';

export interface UserRecord {
  id: number;
  group_id: number;
  email: string;
  password_hash: string;
  first_name: string;
  last_name: string;
  role_id: number;
  disabled: boolean;
  preferences: Record<string, unknown>;
  upload_key: string;
  access_id: string;
  /** JWTs carry it as `ep`; bumped by a password change or disabling, which ends older tokens. */
  token_epoch: number;
  created_at: Date;
  updated_at: Date;
}

/** The public shape of a user (CONTRACT §2); never carries the hash or the per-user keys. */
export interface UserView {
  user_id: number;
  email: string;
  username: string;
  first_name: string;
  last_name: string;
  role_id: number;
  role_name: string;
  disabled: boolean;
  created_at: string;
}

export const usernameOf = (u: Pick<UserRecord, 'first_name' | 'last_name'>): string => [u.first_name, u.last_name].filter((s) => s.length > 0).join(' ');

export const toUserView = (u: UserRecord): UserView => ({
  user_id: u.id,
  email: u.email,
  username: usernameOf(u),
  first_name: u.first_name,
  last_name: u.last_name,
  role_id: u.role_id,
  role_name: ROLE_NAMES[u.role_id] ?? 'UNKNOWN',
  disabled: u.disabled,
  created_at: u.created_at.toISOString(),
});

export const normalizeEmail = (email: string): string => email.trim().toLowerCase();

export const PREFERENCES_MAX_BYTES = 4096;
