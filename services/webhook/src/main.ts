import { telemetry } from './instrument'; // must stay the first import
import { createLogger } from '@dam/logging';
import { runMain, runService } from '@dam/http';
import { buildWebhookApp } from './app';
import { loadWebhookConfig } from './config';

async function main(): Promise<void> {
  const config = loadWebhookConfig();
  const logger = createLogger({ service: 'webhook', level: config.LOG_LEVEL });
  await runService({
    logger,
    host: config.HOST,
    port: config.PORT,
    shutdownTimeoutMs: config.SHUTDOWN_TIMEOUT_MS,
    resources: [{ name: 'telemetry', close: () => telemetry.shutdown() }],
    app: () => buildWebhookApp({ logger }),
  });
}

runMain(main);
