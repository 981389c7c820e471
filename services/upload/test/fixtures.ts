import { connectNats } from '@dam/events';
import type { NatsConnection } from '@nats-io/nats-core';
import {
  createBucket,
  createDatabase,
  s3Env,
  serviceIdentities,
  startNats,
  startServiceProcess,
  type ServiceIdentities,
  type ServiceProcess,
  type TestNats,
} from '@dam/testing';
import { natsPendingJournal, type PendingJournal } from '../src/adapters/pending-upload.journal';

/** What an upload test stands on: a bucket, NATS, a real metadata process, and a reader of the pending journal. */
export interface UploadFixtures {
  bucket: string;
  nats: TestNats;
  metadata: ServiceProcess;
  nc: NatsConnection;
  journal: PendingJournal;
  /** Service keys: metadata trusts them; upload processes and apps sign with `identities.privateKey('upload')`. */
  identities: ServiceIdentities;
  stop(): Promise<void>;
}

export async function startUploadFixtures(name: string, metadataEnv: Record<string, string> = {}): Promise<UploadFixtures> {
  const identities = serviceIdentities();
  const bucket = await createBucket(name);
  const nats = await startNats();
  const metadata = await startServiceProcess('metadata', {
    DATABASE_URL: await createDatabase(`${name.replace(/-/g, '_')}_meta`),
    ...nats.env('metadata'),
    ...identities.env('metadata'),
    LOG_LEVEL: 'warn',
    ...s3Env(bucket),
    ...metadataEnv,
  });
  const nc = await connectNats(nats.url, `${name}-test`, nats.seed('admin'));
  const journal = await natsPendingJournal(nc, { refreshMs: 60_000, onError: () => undefined });
  return {
    bucket,
    nats,
    metadata,
    nc,
    journal,
    identities,
    async stop() {
      await nc.drain();
      await metadata.stop();
      await nats.stop();
    },
  };
}
