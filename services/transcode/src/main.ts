import { telemetry } from './instrument'; // must stay the first import
import { createLogger } from '@dam/logging';
import { runMain, runService } from '@dam/http';
import { buildTranscodeApp } from './app';
import { loadTranscodeConfig } from './config';

async function main(): Promise<void> {
  const config = loadTranscodeConfig();
  const logger = createLogger({ service: 'transcode', level: config.LOG_LEVEL });
  await runService({
    logger,
    host: config.HOST,
    port: config.PORT,
    shutdownTimeoutMs: config.SHUTDOWN_TIMEOUT_MS,
    resources: [{ name: 'telemetry', close: () => telemetry.shutdown() }],
    app: () => buildTranscodeApp({ logger }),
  });
}

runMain(main);
