import { telemetry } from './instrument'; // must stay the first import
import { createAuthenticator } from '@dam/auth-tokens';
import { runMain, serve } from '@dam/http';
import { createLogger } from '@dam/logging';
import { createStorage } from '@dam/storage';
import { httpMetadataClient } from './adapters/metadata.client';
import { buildUploadApp } from './app';
import { loadUploadConfig } from './config';

async function main(): Promise<void> {
  const config = loadUploadConfig();
  const logger = createLogger({ service: 'upload', level: config.LOG_LEVEL });
  const storage = createStorage({
    endpoint: config.S3_ENDPOINT,
    accessKey: config.S3_ACCESS_KEY,
    secretKey: config.S3_SECRET_KEY,
    bucket: config.S3_BUCKET,
    region: config.S3_REGION,
    partSize: config.UPLOAD_PART_SIZE,
  });
  await storage.ensureBucket();

  const app = buildUploadApp({
    logger,
    storage,
    metadata: httpMetadataClient({ baseUrl: config.METADATA_URL, internalSecret: config.INTERNAL_SECRET }),
    authenticate: createAuthenticator({ jwtSecret: config.JWT_SECRET, authUrl: config.AUTH_URL }),
    maxUploadBytes: config.MAX_UPLOAD_BYTES,
    readiness: async () => ({
      s3: await storage.ping().then(
        () => true,
        () => false,
      ),
    }),
  });
  const served = await serve(app, {
    host: config.HOST,
    port: config.PORT,
    logger,
    shutdownTimeoutMs: config.SHUTDOWN_TIMEOUT_MS,
    onShutdown: () => telemetry.shutdown(),
  });
  // Uploads are long requests: the default 5-minute request timeout would cut a slow 5 GiB upload.
  served.server.requestTimeout = 0;
}

runMain(main);
