import { telemetry } from './instrument'; // must stay the first import
import { createLogger } from '@dam/logging';
import { runMain, runService } from '@dam/http';
import { buildLinkSigningApp } from './app';
import { loadLinkSigningConfig } from './config';

async function main(): Promise<void> {
  const config = loadLinkSigningConfig();
  const logger = createLogger({ service: 'link-signing', level: config.LOG_LEVEL });
  await runService({
    logger,
    host: config.HOST,
    port: config.PORT,
    shutdownTimeoutMs: config.SHUTDOWN_TIMEOUT_MS,
    resources: [{ name: 'telemetry', close: () => telemetry.shutdown() }],
    app: () => buildLinkSigningApp({ logger }),
  });
}

runMain(main);
