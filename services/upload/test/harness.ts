import { createPool, type Pool } from '@dam/db';
import { connectNats } from '@dam/events';
import type { NatsConnection } from '@nats-io/nats-core';
import {
  createBucket,
  createDatabase,
  s3Env,
  serviceIdentities,
  startNats,
  startServiceProcess,
  testMinioClient,
  type ServiceIdentities,
  type ServiceProcess,
  type TestNats,
} from '@dam/testing';
import { pgPendingJournal } from '../src/adapters/pending-upload.journal';
import type { PendingJournal } from '../src/domain/ports';
import { migrateUpload } from '../src/migrations';

/** What an upload test stands on: a bucket, NATS, a real metadata process, and a reader of the pending journal. */
export interface UploadFixtures {
  bucket: string;
  nats: TestNats;
  metadata: ServiceProcess;
  nc: NatsConnection;
  journal: PendingJournal;
  /** The upload service's own database (its Idempotency-Key table), shared by the processes started here. */
  database: string;
  /** Service keys: metadata trusts them; upload processes and apps sign with `identities.privateKey('upload')`. */
  identities: ServiceIdentities;
  /**
   * The upload service as a process (main.ts) on these fixtures: `jwtSecret` and `env` on top of the bucket, NATS,
   * its database, metadata and a dead AUTH_URL (JWTs are checked locally); stopped by `stop()`.
   */
  startUpload(jwtSecret: string, env?: Record<string, string>): Promise<ServiceProcess>;
  /** Stops the upload processes started so far (each runs an orphan reaper on the shared journal and bucket). */
  stopUploads(): Promise<void>;
  stop(): Promise<void>;
}

/** Keys of the objects under a prefix of a bucket. */
export async function objectsUnder(bucket: string, prefix: string): Promise<string[]> {
  const names: string[] = [];
  for await (const item of testMinioClient().listObjectsV2(bucket, prefix, true)) if (item.name) names.push(item.name);
  return names;
}

/** Keys of the unfinished multipart uploads under a prefix of a bucket. */
export async function incompleteUploads(bucket: string, prefix: string): Promise<string[]> {
  const keys: string[] = [];
  for await (const u of testMinioClient().listIncompleteUploads(bucket, prefix, true)) keys.push(u.key);
  return keys;
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
  // The upload service's database, migrated as it migrates it, and its journal read as the service reads it.
  const database = await createDatabase(`${name.replace(/-/g, '_')}_upload`);
  const pool: Pool = createPool(database);
  await migrateUpload(pool);
  const journal = pgPendingJournal(pool, { refreshMs: 60_000, onError: () => undefined });
  const started: ServiceProcess[] = [];
  return {
    bucket,
    nats,
    metadata,
    nc,
    journal,
    database,
    identities,
    async startUpload(jwtSecret, env = {}) {
      const p = await startServiceProcess('upload', {
        ...s3Env(bucket),
        JWT_SECRET: jwtSecret,
        SERVICE_KEY: identities.privateKey('upload'),
        METADATA_URL: metadata.url,
        DATABASE_URL: database,
        ...nats.env('upload'),
        AUTH_URL: 'http://127.0.0.1:9',
        LOG_LEVEL: 'warn',
        ...env,
      });
      started.push(p);
      return p;
    },
    async stopUploads() {
      await Promise.all(started.splice(0).map((p) => p.stop()));
    },
    async stop() {
      await Promise.all(started.map((p) => p.stop()));
      await Promise.all([nc.drain(), pool.end()]);
      await metadata.stop();
      await nats.stop();
    },
  };
}
