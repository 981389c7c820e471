import { telemetry } from './instrument'; // must stay the first import
import { createServiceSigner } from '@dam/auth-tokens';
import { edgeLimitsFromConfig, runMain, runService } from '@dam/http';
import { createLogger } from '@dam/logging';
import { createGatewayApp } from './app';
import { loadGatewayConfig } from './config';

async function main(): Promise<void> {
  const config = loadGatewayConfig();
  const logger = createLogger({ service: 'gateway', level: config.LOG_LEVEL });
  const { app } = createGatewayApp({
    logger,
    jwtSecret: config.JWT_SECRET,
    signer: createServiceSigner(config.SERVICE_KEY),
    upstreams: {
      auth: config.AUTH_URL,
      metadata: config.METADATA_URL,
      search: config.SEARCH_URL,
      'link-signing': config.LINK_SIGNING_URL,
      webhook: config.WEBHOOK_URL,
    },
    upstreamTimeoutMs: config.UPSTREAM_TIMEOUT_MS,
    limits: edgeLimitsFromConfig(config),
    userStatusTtlMs: config.USER_STATUS_TTL_MS,
  });
  await runService({
    logger,
    host: config.HOST,
    port: config.PORT,
    shutdownTimeoutMs: config.SHUTDOWN_TIMEOUT_MS,
    // Upstream sockets are left alone: requests still draining use them, and the process exits after.
    resources: [{ name: 'telemetry', close: () => telemetry.shutdown() }],
    // Its readiness is the upstreams' health, checked inside the app.
    app: () => app,
  });
}

runMain(main);
