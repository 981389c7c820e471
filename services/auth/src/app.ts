import type { Express } from 'express';
import { requirePrincipal } from '@dam/auth-tokens';
import { ping, type Pool } from '@dam/db';
import { createHttpApp, finishApp } from '@dam/http';
import type { Logger } from '@dam/logging';
import { LoginLimiter, type LoginLimits } from './domain/login-limiter';
import { apiKeyRoutes } from './routes/api-keys.routes';
import { groupRoutes } from './routes/groups.routes';
import { internalRoutes } from './routes/internal.routes';
import { loginRoutes } from './routes/login.routes';
import { settingsRoutes } from './routes/settings.routes';
import { userRoutes } from './routes/users.routes';

export interface AuthAppDeps {
  pool: Pool;
  logger: Logger;
  jwtSecret: string;
  internalSecret: string;
  jwtTtlSeconds: number;
  loginLimits: LoginLimits;
}

const PRINCIPAL_PATHS = ['/api/v1/users', '/api/v1/groups', '/api/v1/api_keys', '/api/v1/settings'];

export function createAuthApp(deps: AuthAppDeps): Express {
  const app = createHttpApp({ logger: deps.logger, readiness: async () => ({ database: await ping(deps.pool) }) });
  app.use(
    loginRoutes({
      pool: deps.pool,
      limiter: new LoginLimiter(deps.loginLimits),
      jwtSecret: deps.jwtSecret,
      jwtTtlSeconds: deps.jwtTtlSeconds,
    }),
  );
  app.use(internalRoutes(deps.pool));
  // Everything else is reached through the gateway, which signs the caller's principal.
  app.use(PRINCIPAL_PATHS, requirePrincipal(deps.internalSecret));
  app.use(userRoutes(deps.pool));
  app.use(groupRoutes(deps.pool));
  app.use(apiKeyRoutes(deps.pool));
  app.use(settingsRoutes(deps.pool));
  return finishApp(app, deps.logger);
}
