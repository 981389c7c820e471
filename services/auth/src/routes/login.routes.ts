import { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import { serviceCallOf, verifyJwt } from '@dam/auth-tokens';
import { forbidden, unauthenticated } from '@dam/errors';
import { parsed, validate } from '@dam/http';
import type { Pool } from '@dam/db';
import { NotificationRepository } from '../adapters/notification.repository';
import { UserRepository } from '../adapters/user.repository';
import type { LoginLimiter } from '../domain/login-limiter';
import { login } from '../use-cases/login.use-case';

export interface LoginRoutesDeps {
  pool: Pool;
  limiter: LoginLimiter;
  jwtSecret: string;
  /** JWT_PREVIOUS_SECRET: Validate JWT still accepts tokens signed before the last rotation. */
  jwtPreviousSecret?: string;
  jwtTtlSeconds: number;
}

const loginBody = z.object({ email: z.string().trim().min(1).max(320), password: z.string().min(1).max(1024) });
export const loginSchemas = { body: loginBody };

function jwtOf(req: Request): string {
  const header = req.header('authorization');
  if (header) {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (m?.[1]) return m[1];
  }
  const q = req.query._jwt;
  if (typeof q === 'string' && q.length > 0) return q;
  throw unauthenticated('Send the JWT as "Authorization: Bearer <JWT>" or the _jwt query parameter');
}

/** Spec endpoints 1 (Login) and 17 (Validate JWT): the only user routes without a principal. */
export function loginRoutes(deps: LoginRoutesDeps): Router {
  const router = Router();
  const users = new UserRepository(deps.pool);
  const notifications = new NotificationRepository(deps.pool);

  router.post('/api/v1/login', validate(loginSchemas), async (req, res) => {
    const { body } = parsed(loginSchemas, req, res);
    const result = await login(
      { users, notifications, limiter: deps.limiter, jwtSecret: deps.jwtSecret, jwtTtlSeconds: deps.jwtTtlSeconds },
      // The client's address as the gateway determined it (its TRUST_PROXY rules), signed into its token: our
      // own socket only ever sees the gateway.
      { email: body.email, password: body.password, address: serviceCallOf(res).clientAddress ?? 'unknown' },
    );
    res.json(result);
  });

  const validateJwt = async (req: Request, res: Response) => {
    const claims = verifyJwt(jwtOf(req), deps.jwtSecret, deps.jwtPreviousSecret);
    const user = await users.findVisible(claims.gid, claims.sub);
    if (!user) throw unauthenticated('The token is invalid', 'INVALID_TOKEN');
    if (user.disabled) throw forbidden('This account is disabled', 'ACCOUNT_DISABLED');
    if (claims.ep < user.token_epoch) throw unauthenticated('The token was revoked (password changed or account disabled)', 'TOKEN_REVOKED');
    res.json({
      valid: true,
      user_id: claims.sub,
      group_id: claims.gid,
      // The role the user has now, not the one the token was signed with.
      role_id: user.role_id,
      expires_at: new Date(claims.exp * 1000).toISOString(),
    });
  };
  router.get('/api/v1/auth/validate', validateJwt);
  router.post('/api/v1/auth/validate', validateJwt);
  return router;
}
