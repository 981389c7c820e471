import { connectNats } from '@dam/events';
import type { NatsConnection } from '@nats-io/nats-core';
import { createBucket, createDatabase, s3Env, startNats, startServiceProcess, type ServiceProcess, type TestNats } from '@dam/testing';
import { natsPendingJournal, type PendingJournal } from '../src/adapters/pending-upload.journal';

/** What an upload test stands on: a bucket, NATS, a real metadata process, and a reader of the pending journal. */
export interface UploadFixtures {
  bucket: string;
  nats: TestNats;
  metadata: ServiceProcess;
  nc: NatsConnection;
  journal: PendingJournal;
  stop(): Promise<void>;
}

export async function startUploadFixtures(name: string, internalSecret: string): Promise<UploadFixtures> {
  const bucket = await createBucket(name);
  const nats = await startNats();
  const metadata = await startServiceProcess('metadata', {
    DATABASE_URL: await createDatabase(`${name.replace(/-/g, '_')}_meta`),
    NATS_URL: nats.url,
    INTERNAL_SECRET: internalSecret,
    LOG_LEVEL: 'warn',
    ...s3Env(bucket),
  });
  const nc = await connectNats(nats.url, `${name}-test`);
  const journal = await natsPendingJournal(nc, { refreshMs: 60_000, onError: () => undefined });
  return {
    bucket,
    nats,
    metadata,
    nc,
    journal,
    async stop() {
      await nc.drain();
      await metadata.stop();
      await nats.stop();
    },
  };
}
