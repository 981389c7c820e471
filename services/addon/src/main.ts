import { telemetry } from './instrument'; // must stay the first import
import { createLogger } from '@dam/logging';
import { runMain, serve } from '@dam/http';
import { buildAddonApp } from './app';
import { loadAddonConfig } from './config';

async function main(): Promise<void> {
  const config = loadAddonConfig();
  const logger = createLogger({ service: 'addon', level: config.LOG_LEVEL });
  await serve(buildAddonApp({ logger }), {
    host: config.HOST,
    port: config.PORT,
    logger,
    shutdownTimeoutMs: config.SHUTDOWN_TIMEOUT_MS,
    onShutdown: () => telemetry.shutdown(),
  });
}

runMain(main);
