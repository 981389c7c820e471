import { telemetry } from './instrument'; // must stay the first import
import { createLogger } from '@dam/logging';
import { runMain, runService } from '@dam/http';
import { buildSearchApp } from './app';
import { loadSearchConfig } from './config';

async function main(): Promise<void> {
  const config = loadSearchConfig();
  const logger = createLogger({ service: 'search', level: config.LOG_LEVEL });
  await runService({
    logger,
    host: config.HOST,
    port: config.PORT,
    shutdownTimeoutMs: config.SHUTDOWN_TIMEOUT_MS,
    resources: [{ name: 'telemetry', close: () => telemetry.shutdown() }],
    app: () => buildSearchApp({ logger }),
  });
}

runMain(main);
