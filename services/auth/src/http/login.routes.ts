import { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import { serviceCallOf } from '@dam/auth-tokens';
import { unauthenticated } from '@dam/errors';
import { parsed, validate } from '@dam/http';
import type { LoginLimiter } from '../domain/login-limiter';
import type { AuthStore } from '../domain/ports';
import { login } from '../use-cases/login.use-case';
import { validateJwt } from '../use-cases/validate-jwt.use-case';

export interface LoginRoutesDeps {
  store: AuthStore;
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
  const { users, notifications } = deps.store;

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

  const validate_ = async (req: Request, res: Response) => {
    res.json(
      await validateJwt({ users, jwtSecret: deps.jwtSecret, ...(deps.jwtPreviousSecret ? { jwtPreviousSecret: deps.jwtPreviousSecret } : {}) }, jwtOf(req)),
    );
  };
  router.get('/api/v1/auth/validate', validate_);
  router.post('/api/v1/auth/validate', validate_);
  return router;
}
