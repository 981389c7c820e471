import { setTimeout as sleep } from 'node:timers/promises';
import { ROLE_NAMES, permissionsFor, signJwt } from '@dam/auth-tokens';
import { forbidden, unauthenticated } from '@dam/errors';
import type { LoginLimiter } from '../domain/login-limiter';
import { NOTIFICATIONS_PER_LOGIN } from '../domain/notifications';
import type { Notifications, Users } from '../domain/ports';
import { verifyAgainstDummy, verifyPassword } from '../domain/passwords';
import { normalizeEmail, usernameOf, type UserRecord } from '../domain/users';

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

/** The user's messages (auth's own table: no other service is asked during a login). */
export type NotificationInbox = Pick<Notifications, 'takeUnseen'>;

export interface LoginDeps {
  users: Users;
  notifications: NotificationInbox;
  limiter: Pick<LoginLimiter, 'begin'>;
  jwtSecret: string;
  jwtTtlSeconds: number;
}

const WRONG = 'Wrong email or password';

/**
 * The account the password opens. The same email may have an account in several groups (emails are unique per
 * group): the password picks the oldest one it matches. Every candidate is checked, in parallel, so the time an
 * answer takes says little about how many groups know the email; an unknown email costs one check as well.
 */
async function accountOf(users: Users, email: string, password: string): Promise<UserRecord | undefined> {
  const candidates = await users.findAllByEmail(email);
  if (candidates.length === 0) {
    await verifyAgainstDummy(password);
    return undefined;
  }
  const matches = await Promise.all(candidates.map((c) => verifyPassword(password, c.password_hash)));
  return candidates.find((_, i) => matches[i]);
}

export async function login(deps: LoginDeps, input: { email: string; password: string; address: string }): Promise<LoginResult> {
  const email = normalizeEmail(input.email);
  const attempt = await deps.limiter.begin(email, input.address);
  let user: UserRecord | undefined;
  try {
    // Past a bound strangers share (an address, an email), held before the check whatever the password: a right one
    // still logs in, and a guess's verdict costs the guesser this wait as well.
    if (attempt.holdMs > 0) await sleep(attempt.holdMs);
    user = await accountOf(deps.users, email, input.password);
  } catch (err) {
    // The error answered is the first one; an attempt the store cannot uncount (it is down too) stays a failure.
    await attempt.abandoned().catch(() => undefined);
    throw err;
  }
  // One message for both cases: the answer must not reveal which emails exist. (The attempt already counts.)
  // Past a bound a wrong password answers 429 with Retry-After, never a right one.
  if (!user) throw attempt.failed() ?? unauthenticated(WRONG, 'INVALID_CREDENTIALS');
  // The password was right, whatever follows: no guess to slow down.
  await attempt.succeeded();
  // Checked after the password so a stranger cannot learn that an account exists but is disabled.
  if (user.disabled) throw forbidden('This account is disabled', 'ACCOUNT_DISABLED');
  await deps.users.touchLogin(user.id);
  const notifications = await deps.notifications.takeUnseen(user.id, NOTIFICATIONS_PER_LOGIN);
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
    // Messages since the last login: failed jobs the user asked for, their disabled API keys, and for the users who
    // manage settings the group's webhooks that gave up.
    notifications,
  };
}
