import type { Express } from 'express';
import { requireRoutePermission, type ServiceVerifier } from '@dam/auth-tokens';
import { ping, type Pool } from '@dam/db';
import { createHttpApp, finishApp, outboundTargetProblem, outboundUrlProblem, type ReadinessCheck } from '@dam/http';
import type { Logger } from '@dam/logging';
import { LoginAttemptRepository } from './adapters/login-attempt.repository';
import { pgAuthStore } from './adapters/pg-store';
import { UsageRepository } from './adapters/usage.repository';
import { LoginLimiter, type LoginLimits } from './domain/login-limiter';
import type { AssetDirectory } from './domain/ports';
import { apiKeyRoutes } from './http/api-keys.routes';
import { groupRoutes } from './http/groups.routes';
import { internalRoutes } from './http/internal.routes';
import { loginRoutes } from './http/login.routes';
import { settingsRoutes } from './http/settings.routes';
import { usageRoutes } from './http/usage.routes';
import { userRoutes } from './http/users.routes';

export interface AuthAppDeps {
  pool: Pool;
  logger: Logger;
  jwtSecret: string;
  /** JWT_PREVIOUS_SECRET, during a rotation (verifies only; new tokens are signed with jwtSecret). */
  jwtPreviousSecret?: string;
  /** Checks the token of every calling service; routes below name which services may call them. */
  verifier: ServiceVerifier;
  jwtTtlSeconds: number;
  loginLimits: LoginLimits;
  /** The login limiter's clock (tests move it instead of waiting out delays); Date.now by default. Its counts are in `pool`. */
  now?: () => number;
  /** metadata's view of assets (settings check a watermark asset against it). */
  assets: AssetDirectory;
  webhookAllowHosts: readonly string[];
  /** Tells the services that keep group settings that a group's changed (NATS); without it they read them fresh. */
  announceSettingsChange?: (groupId: number) => Promise<void>;
  /** The service's whole readiness (runService's: the database, NATS, the usage worker); the database alone by default. */
  readiness?: ReadinessCheck;
}

const PRINCIPAL_PATHS = ['/api/v1/users', '/api/v1/groups', '/api/v1/api_keys', '/api/v1/settings', '/api/v1/usage'];

/**
 * Who may call what (ARCHITECTURE rule 9). Nothing here is reachable without a service token: the public API
 * through the gateway only, the internal routes by the services that need them.
 */
function guardRoutes(app: Express, verifier: ServiceVerifier): void {
  const { guard } = verifier;
  // Login and validate carry no user yet; the gateway's token carries the client's address instead.
  app.all(['/api/v1/login', '/api/v1/auth/validate'], guard({ callers: ['gateway'], principal: 'none' }));
  app.use(PRINCIPAL_PATHS, guard({ callers: ['gateway'], principal: 'required' }));
  // The two public edges authenticate API keys and check JWT users here.
  app.all('/internal/v1/authenticate', guard({ callers: ['gateway', 'upload'], principal: 'none' }));
  // The edges check that a JWT's user is still active, with which role and token epoch.
  app.all('/internal/v1/groups/:group_id/users/:user_id/status', guard({ callers: ['gateway', 'upload'], principal: 'none' }));
  // link-signing reads whose links an accessID names on every delivery...
  app.all('/internal/v1/access/:access_id', guard({ callers: ['link-signing'], principal: 'none' }));
  // ...and, minting a link for a user or an API key, the accessID it is to carry.
  app.all('/internal/v1/access_id', guard({ callers: ['link-signing'], principal: 'required' }));
  // Settings hold the webhook signing secret: only the workers that apply them.
  app.all('/internal/v1/groups/:group_id/settings', guard({ callers: ['conversion', 'transcode', 'metadata', 'webhook'], principal: 'none' }));
  app.use(['/api', '/internal'], verifier.onlyGuarded);
  // The permission of each public route, checked here again on the gateway's own table.
  app.use('/api', requireRoutePermission('auth'));
}

/** The app over auth's PostgreSQL records: the adapters are built here once, from the pool main.ts gives it. */
export function createAuthApp(deps: AuthAppDeps): Express {
  const app = createHttpApp({ logger: deps.logger, readiness: deps.readiness ?? (async () => ({ postgres: await ping(deps.pool) })) });
  guardRoutes(app, deps.verifier);
  const store = pgAuthStore(deps.pool);
  const { webhookAllowHosts } = deps;
  app.use(
    loginRoutes({
      store,
      limiter: new LoginLimiter(new LoginAttemptRepository(deps.pool), deps.loginLimits, deps.now),
      jwtSecret: deps.jwtSecret,
      ...(deps.jwtPreviousSecret ? { jwtPreviousSecret: deps.jwtPreviousSecret } : {}),
      jwtTtlSeconds: deps.jwtTtlSeconds,
    }),
  );
  app.use(internalRoutes(store));
  app.use(userRoutes(store));
  app.use(groupRoutes(store));
  app.use(apiKeyRoutes(store));
  app.use(
    settingsRoutes({
      store,
      assets: deps.assets,
      // CONTRACT §11: by its name, then by what the name resolves to.
      webhookUrlProblem: async (url) => outboundUrlProblem(url, webhookAllowHosts) ?? (await outboundTargetProblem(url, { allowHosts: webhookAllowHosts })),
      onAnnounceFailed: (error, groupId) => deps.logger.warn({ err: error, group_id: groupId }, 'settings change not announced'),
      ...(deps.announceSettingsChange ? { announce: deps.announceSettingsChange } : {}),
    }),
  );
  app.use(usageRoutes(new UsageRepository(deps.pool)));
  return finishApp(app, deps.logger);
}
