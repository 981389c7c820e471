import { ROLE_NAMES, permissionsFor, signJwt } from '@dam/auth-tokens';
import { forbidden, unauthenticated } from '@dam/errors';
import type { UserRepository } from '../adapters/user.repository';
import type { LoginLimiter } from '../domain/login-limiter';
import { verifyAgainstDummy, verifyPassword } from '../domain/passwords';
import { normalizeEmail, usernameOf } from '../domain/users';

/** Spec "Login result": every field, with these exact types. */
export interface LoginResult {
  user_id: number;
  user_email: string;
  username: string;
  jwt: string;
  role_id: number;
  role_name: string;
  permissions: string[];
  uploadkey: string;
  accessID: string;
  preferences: Record<string, unknown>;
  notifications: string[];
}

export interface LoginDeps {
  users: UserRepository;
  limiter: LoginLimiter;
  jwtSecret: string;
  jwtTtlSeconds: number;
}

const WRONG = 'Wrong email or password';

export async function login(deps: LoginDeps, input: { email: string; password: string; address: string }): Promise<LoginResult> {
  const email = normalizeEmail(input.email);
  deps.limiter.check(email, input.address);
  // The same email may have an account in several groups: the password picks the account (the oldest one
  // whose password matches, should two share a password too).
  const candidates = await deps.users.findAllByEmail(email);
  let user: (typeof candidates)[number] | undefined;
  for (const candidate of candidates) {
    if (await verifyPassword(input.password, candidate.password_hash)) {
      user = candidate;
      break;
    }
  }
  if (candidates.length === 0) await verifyAgainstDummy(input.password);
  if (!user) {
    deps.limiter.recordFailure(email, input.address);
    // One message for both cases: the answer must not reveal which emails exist.
    throw unauthenticated(WRONG, 'INVALID_CREDENTIALS');
  }
  // Checked after the password so a stranger cannot learn that an account exists but is disabled.
  if (user.disabled) throw forbidden('This account is disabled', 'ACCOUNT_DISABLED');
  deps.limiter.recordSuccess(email, input.address);
  await deps.users.touchLogin(user.id);
  const { token } = signJwt({ sub: user.id, gid: user.group_id, role: user.role_id, ep: user.token_epoch }, deps.jwtSecret, deps.jwtTtlSeconds);
  return {
    user_id: user.id,
    user_email: user.email,
    username: usernameOf(user),
    jwt: token,
    role_id: user.role_id,
    role_name: ROLE_NAMES[user.role_id] ?? 'UNKNOWN',
    permissions: permissionsFor(user.role_id),
    uploadkey: user.upload_key,
    accessID: user.access_id,
    preferences: user.preferences,
    // Messages since last login: nothing produces them yet.
    notifications: [],
  };
}
