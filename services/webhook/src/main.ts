import { telemetry } from './instrument'; // must stay the first import
import { createLogger } from '@dam/logging';
import { runMain, serve } from '@dam/http';
import { buildWebhookApp } from './app';
import { loadWebhookConfig } from './config';

async function main(): Promise<void> {
  const config = loadWebhookConfig();
  const logger = createLogger({ service: 'webhook', level: config.LOG_LEVEL });
  await serve(buildWebhookApp({ logger }), {
    host: config.HOST,
    port: config.PORT,
    logger,
    shutdownTimeoutMs: config.SHUTDOWN_TIMEOUT_MS,
    onShutdown: () => telemetry.shutdown(),
  });
}

runMain(main);
