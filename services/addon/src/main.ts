import { telemetry } from './instrument'; // must stay the first import
import { createLogger } from '@dam/logging';
import { runMain, runService } from '@dam/http';
import { buildAddonApp } from './app';
import { loadAddonConfig } from './config';

async function main(): Promise<void> {
  const config = loadAddonConfig();
  const logger = createLogger({ service: 'addon', level: config.LOG_LEVEL });
  await runService({
    logger,
    host: config.HOST,
    port: config.PORT,
    shutdownTimeoutMs: config.SHUTDOWN_TIMEOUT_MS,
    resources: [{ name: 'telemetry', close: () => telemetry.shutdown() }],
    app: () => buildAddonApp({ logger }),
  });
}

runMain(main);
