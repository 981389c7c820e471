import { verifyJwt } from '@dam/auth-tokens';
import { forbidden, unauthenticated } from '@dam/errors';
import type { Users } from '../domain/ports';

export interface ValidJwt {
  valid: true;
  user_id: number;
  group_id: number;
  role_id: number;
  expires_at: string;
}

/**
 * Validate JWT (spec endpoint 17): the signature (the current secret or, during a rotation, the previous one), then
 * the user as it is now: gone, disabled, or the token older than its last password change or disabling.
 */
export async function validateJwt(deps: { users: Users; jwtSecret: string; jwtPreviousSecret?: string }, jwt: string): Promise<ValidJwt> {
  const claims = verifyJwt(jwt, deps.jwtSecret, deps.jwtPreviousSecret);
  const user = await deps.users.findVisible(claims.gid, claims.sub);
  if (!user) throw unauthenticated('The token is invalid', 'INVALID_TOKEN');
  if (user.disabled) throw forbidden('This account is disabled', 'ACCOUNT_DISABLED');
  if (claims.ep < user.token_epoch) throw unauthenticated('The token was revoked (password changed or account disabled)', 'TOKEN_REVOKED');
  // The role the user has now, not the one the token was signed with.
  return { valid: true, user_id: claims.sub, group_id: claims.gid, role_id: user.role_id, expires_at: new Date(claims.exp * 1000).toISOString() };
}
