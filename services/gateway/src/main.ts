import { telemetry } from './instrument'; // must stay the first import
import { createServiceSigner } from '@dam/auth-tokens';
import { jetstream } from '@nats-io/jetstream';
import { connectNats, publishEvent, UsageMeter, usageOf } from '@dam/events';
import { edgeLimitsFromConfig, runMain, runService } from '@dam/http';
import { createLogger } from '@dam/logging';
import { createGatewayApp } from './app';
import { loadGatewayConfig } from './config';

async function main(): Promise<void> {
  const config = loadGatewayConfig();
  const logger = createLogger({ service: 'gateway', level: config.LOG_LEVEL });
  // Usage statistics: authenticated requests counted per group and user, published every USAGE_FLUSH_MS.
  const nc = config.NATS_URL ? await connectNats(config.NATS_URL, 'gateway', config.NATS_NKEY_SEED) : undefined;
  if (!nc) logger.warn('NATS_URL is not set: API requests are not counted');
  const requests = new UsageMeter('api_requests');
  const usage = usageOf('api_requests');
  const flushUsage = async () => {
    if (nc) await requests.flush((record) => publishEvent(jetstream(nc), usage.subject, usage.schema, record, { msgId: record.id }));
  };
  const { app } = createGatewayApp({
    ...(nc ? { countRequest: (p) => requests.add(p.group_id, p.user_id, 1) } : {}),
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
    workers: [
      {
        kind: 'poller',
        name: 'usage-flush',
        start() {
          const timer = setInterval(() => void flushUsage().catch((error: unknown) => logger.warn({ err: error }, 'usage flush failed')), config.USAGE_FLUSH_MS);
          timer.unref();
          return { stop: async () => clearInterval(timer) };
        },
      },
    ],
    // Upstream sockets are left alone: requests still draining use them, and the process exits after. The last
    // counts are published before NATS closes.
    resources: [
      { name: 'telemetry', close: () => telemetry.shutdown() },
      ...(nc ? [{ name: 'nats', close: async () => { await flushUsage().catch(() => undefined); await nc.drain(); } }] : []),
    ],
    // Its readiness is the upstreams' health, checked inside the app.
    app: () => app,
  });
}

runMain(main);
