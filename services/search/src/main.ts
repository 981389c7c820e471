import { telemetry } from './instrument'; // must stay the first import
import { createLogger } from '@dam/logging';
import { runMain, serve } from '@dam/http';
import { buildSearchApp } from './app';
import { loadSearchConfig } from './config';

async function main(): Promise<void> {
  const config = loadSearchConfig();
  const logger = createLogger({ service: 'search', level: config.LOG_LEVEL });
  await serve(buildSearchApp({ logger }), {
    host: config.HOST,
    port: config.PORT,
    logger,
    shutdownTimeoutMs: config.SHUTDOWN_TIMEOUT_MS,
    onShutdown: () => telemetry.shutdown(),
  });
}

runMain(main);
