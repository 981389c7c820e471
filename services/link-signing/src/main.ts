import { telemetry } from './instrument'; // must stay the first import
import { createLogger } from '@dam/logging';
import { runMain, serve } from '@dam/http';
import { buildLinkSigningApp } from './app';
import { loadLinkSigningConfig } from './config';

async function main(): Promise<void> {
  const config = loadLinkSigningConfig();
  const logger = createLogger({ service: 'link-signing', level: config.LOG_LEVEL });
  await serve(buildLinkSigningApp({ logger }), {
    host: config.HOST,
    port: config.PORT,
    logger,
    shutdownTimeoutMs: config.SHUTDOWN_TIMEOUT_MS,
    onShutdown: () => telemetry.shutdown(),
  });
}

runMain(main);
