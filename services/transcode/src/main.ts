import { telemetry } from './instrument'; // must stay the first import
import { createLogger } from '@dam/logging';
import { runMain, serve } from '@dam/http';
import { buildTranscodeApp } from './app';
import { loadTranscodeConfig } from './config';

async function main(): Promise<void> {
  const config = loadTranscodeConfig();
  const logger = createLogger({ service: 'transcode', level: config.LOG_LEVEL });
  await serve(buildTranscodeApp({ logger }), {
    host: config.HOST,
    port: config.PORT,
    logger,
    shutdownTimeoutMs: config.SHUTDOWN_TIMEOUT_MS,
    onShutdown: () => telemetry.shutdown(),
  });
}

runMain(main);
