/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are untyped JSON; the assertions check them */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import { createServiceVerifier, parseTrustedKeys, permissionsFor, type Principal, type RoleName } from '@dam/auth-tokens';
import { createPool, type Pool } from '@dam/db';
import { unavailable } from '@dam/errors';
import {
  addonStatusClient,
  connectNats,
  consume,
  ensureStreams,
  jobReportSubject,
  workerKindOf,
  type ConversionsCompleted,
  type JobOutputs,
  type JobReport,
} from '@dam/events';
import { startOutboxRelay, type OutboxRelay } from '@dam/outbox';
import { createLogger } from '@dam/logging';
import { createStorage, originalKey, type Storage } from '@dam/storage';
import { createBucket, createDatabase, scaled, serviceIdentities, startNats, testS3Config, type TestNats } from '@dam/testing';
import { z } from 'zod';
import { bulkDeleteExports } from '../src/adapters/bulk-delete-export.store';
import { DataUpdateRepository } from '../src/adapters/data-update.repository';
import { pgTransactions } from '../src/adapters/transaction';
import { buildMetadataApp } from '../src/app';
import { publicPolicySync } from '../src/adapters/public-object.repository';
import { dataUpdatesPoller, localJobsPoller, objectDeletionsPoller, publicPolicyPoller } from '../src/consumers/housekeeping.pollers';
import { consumeJobReports } from '../src/consumers/job-reports.consumer';
import type { DeletionRetry } from '../src/adapters/object-deletion.repository';
import { DEFAULT_JOB_TIMINGS, type JobTimings } from '../src/domain/job';
import type { RunInTransaction } from '../src/domain/ports';
import { migrateMetadata } from '../src/migrations';

/** Key pairs of the suite's services: metadata trusts them all, tests sign as the edge a route expects. */
export const identities = serviceIdentities();

export type Nats = Awaited<ReturnType<typeof connectNats>>;

/** The metadata service in-process, over real PostgreSQL, NATS JetStream and S3. */
export interface Harness {
  url: string;
  pool: Pool;
  storage: Storage;
  nc: Nats;
  nats: TestNats;
  relay: OutboxRelay;
  timings: JobTimings;
  transactions: RunInTransaction;
  /** What auth would answer as each group's settings (none: the defaults). */
  settings: Map<string, Record<string, unknown>>;
  /** Groups whose settings auth cannot be asked for now (as when auth is down): reading them fails with 503. */
  settingsDown: Set<string>;
  stop(): Promise<void>;
}

export interface HarnessOptions {
  timings?: Partial<JobTimings>;
  /** The deletion queue's retry policy, and a removal that fails for keys a test picks (before reaching S3). */
  deletions?: { retry?: DeletionRetry; failing?: (key: string) => Error | undefined };
}

export async function startMetadata(options: HarnessOptions = {}): Promise<Harness> {
  const timings = { ...DEFAULT_JOB_TIMINGS, ...options.timings };
  const logger = createLogger({ service: 'metadata-test', level: process.env.LOG_LEVEL ?? 'error' });
  const pool = createPool(await createDatabase('metadata'));
  await migrateMetadata(pool);
  const s3 = testS3Config(await createBucket('metadata'));
  const storage = createStorage({ endpoint: s3.endpoint, accessKey: s3.accessKey, secretKey: s3.secretKey, bucket: s3.bucket, region: s3.region });
  const nats = await startNats();
  // The service's side runs as its own NATS identity, as in production; the test's side as admin.
  const service = await connectNats(nats.url, 'metadata', nats.seed('metadata'));
  await ensureStreams(service);
  const nc = await connectNats(nats.url, 'metadata-test', nats.seed('admin'));
  const relay = startOutboxRelay({ pool, nc: service, logger, intervalMs: 50 });
  const transactions = pgTransactions(pool, timings);
  const consumer = await consumeJobReports(service, transactions, logger, 2);
  const settings = new Map<string, Record<string, unknown>>();
  const settingsDown = new Set<string>();
  const pollers = await Promise.all(
    [
      localJobsPoller(transactions, logger, 100, bulkDeleteExports(storage)),
      dataUpdatesPoller(transactions, new DataUpdateRepository(pool), logger, 50),
      objectDeletionsPoller(pool, removalsOf(storage, options.deletions?.failing), logger, 100, options.deletions?.retry),
      publicPolicyPoller(publicPolicySync(pool, storage), logger, 100),
    ].map((w) => w.start()),
  );
  const app = buildMetadataApp({
    logger,
    pool,
    storage,
    jobTimings: timings,
    groupSettings: {
      get: async (groupId) => {
        if (settingsDown.has(groupId)) throw unavailable(`auth is unreachable for the settings of group ${groupId}`, 'SETTINGS_UNAVAILABLE');
        return settings.get(groupId) ?? {};
      },
    },
    // Asked of whoever answers as the addon service (tests play it), as in production.
    // Answered from the test's own process: room for a loaded machine (a late answer reads as "nobody knows").
    addonUnavailable: addonStatusClient(service, { timeoutMs: scaled(1000), cacheMs: 0 }),
    verifier: createServiceVerifier({ service: 'metadata', trusted: parseTrustedKeys(identities.trustedKeys()) }),
  });
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    pool,
    storage,
    nc,
    nats,
    relay,
    timings,
    transactions,
    settings,
    settingsDown,
    async stop() {
      await Promise.all(pollers.map((p) => p.stop()));
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await consumer.stop();
      await relay.stop();
      await nc.drain().catch(() => undefined);
      await service.drain().catch(() => undefined);
      await nats.stop();
      await pool.end();
    },
  };
}

/** The storage's removals, failing with the error `failing` gives for a key. */
function removalsOf(storage: Storage, failing?: (key: string) => Error | undefined): Pick<Storage, 'remove' | 'removePrefix'> {
  const check = (key: string) => {
    const error = failing?.(key);
    if (error) throw error;
  };
  return {
    remove: async (key) => (check(key), storage.remove(key)),
    removePrefix: async (prefix) => (check(prefix), storage.removePrefix(prefix)),
  };
}

export function principal(overrides: Partial<Principal> & { role?: RoleName } = {}): Principal {
  const role = overrides.role ?? 'ADMIN';
  const roleIds: Record<string, number> = { ADMIN: 1, MANAGER: 2, USER: 3, CREATOR: 4 };
  return {
    user_id: 7,
    group_id: 1,
    role_id: roleIds[role] ?? 1,
    role_name: role,
    permissions: permissionsFor(role),
    via: 'jwt',
    ...overrides,
  };
}

/** fetch for `p` as the edge that reaches the route: upload for `/internal`, the gateway for `/api`. */
export function signedFetch(url: string, p: Principal, init: RequestInit = {}): Promise<Response> {
  const u = new URL(url);
  const caller = u.pathname.startsWith('/internal/') ? 'upload' : 'gateway';
  // The token is bound to the body (security review I6): JSON text as sent, a form as a stream.
  const sent = init.body === undefined || init.body === null ? {} : typeof init.body === 'string' ? { body: init.body } : { streamedBody: true };
  const call = identities.headers(caller, { audience: 'metadata', method: init.method ?? 'GET', path: u.pathname + u.search, principal: p, ...sent });
  return fetch(url, { ...init, headers: { ...(init.headers as Record<string, string> | undefined), ...call } });
}

/** Collects every message of a stream matching `filter` through a throwaway durable consumer. */
export async function collect(
  nc: Nats,
  stream: string,
  filter: string,
): Promise<{ messages: Array<{ subject: string; payload: any }>; stop: () => Promise<void> }> {
  const messages: Array<{ subject: string; payload: any }> = [];
  const consumer = await consume({
    nc,
    stream,
    durable: `test-${Math.random().toString(36).slice(2)}`,
    filterSubjects: filter,
    schema: z.any(),
    handler: async (payload, ctx) => {
      messages.push({ subject: ctx.subject, payload });
    },
    logger: createLogger({ service: 'collector', level: 'error' }),
    concurrency: 10,
    fetchExpiresMs: 1000,
  });
  return { messages, stop: () => consumer.stop() };
}

export const assetId = (): string => randomBytes(16).toString('hex');

/** One stored original as upload describes it; every field has a default. */
export interface OriginalFile {
  id?: string;
  name?: string;
  size?: number;
  checksum?: string;
  contentType?: string;
}

/**
 * POST /internal/v1/assets for one stored original, as upload does (as `caller`, in its group), with the upload's
 * `custom_metadata` when given: the asset's id and the answer as it came.
 */
export async function postAsset(
  h: Harness,
  caller: Principal,
  file: OriginalFile = {},
  customMetadata?: unknown,
): Promise<{ id: string; status: number; body: any }> {
  const id = file.id ?? assetId();
  const res = await signedFetch(`${h.url}/internal/v1/assets`, caller, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      files: [
        {
          id,
          name: file.name ?? 'f.png',
          size: file.size ?? 3,
          checksum: file.checksum ?? createHash('md5').update('png').digest('hex'),
          content_type: file.contentType ?? 'image/png',
          object_key: originalKey(String(caller.group_id), id),
          metadata: {},
        },
      ],
      ...(customMetadata === undefined ? {} : { custom_metadata: customMetadata }),
    }),
  });
  return { id, status: res.status, body: await res.json() };
}

/**
 * Registers a stored original as upload does and returns the new asset's id: the record in NOT_READY with its
 * processing job queued.
 */
export async function registerAsset(h: Harness, caller: Principal, file: OriginalFile = {}): Promise<string> {
  const { id, status, body } = await postAsset(h, caller, file);
  if (status !== 201) throw new Error(`registering ${id}: ${status} ${JSON.stringify(body)}`);
  return id;
}

/** The newest job of an asset (tests address reports to it as a worker would). */
export async function jobIdOf(h: Harness, assetId: string): Promise<number> {
  const { rows } = await h.pool.query<{ id: string }>('SELECT id FROM jobs WHERE $1 = ANY(asset_ids) ORDER BY id DESC LIMIT 1', [assetId]);
  if (!rows[0]) throw new Error(`asset ${assetId} has no job`);
  return Number(rows[0].id);
}

/**
 * A worker's final report for the asset's newest job: COMPLETED with `made`, or FAILED when `made` has errors
 * and no outputs (as the conversion worker decides).
 */
export async function finalReport(h: Harness, made: ConversionsCompleted, extra: Partial<JobReport> = {}): Promise<JobReport> {
  const failed = Object.keys(made.conversions).length === 0 && Object.keys(made.errors).length > 0;
  return {
    id: randomUUID(),
    job_id: await jobIdOf(h, made.asset_id),
    attempt: 0,
    group_id: made.group_id,
    asset_id: made.asset_id,
    worker: 'conversion@test:1',
    state: failed ? 'FAILED' : 'COMPLETED',
    step: 'conversions',
    progress: 100,
    outputs: outputsOf(made),
    ...extra,
  };
}

/** What the report says was made, as workers send it (`outputs`: the job and asset are the report's own). */
export const outputsOf = ({ id: _id, asset_id: _asset, group_id: _group, ...outputs }: ConversionsCompleted): JobOutputs => outputs;

/** The same report as a worker of the previous release sends it: the outputs wrapped with ids of their own. */
export async function legacyFinalReport(h: Harness, made: ConversionsCompleted, extra: Partial<JobReport> = {}): Promise<JobReport> {
  const { outputs: _outputs, ...report } = await finalReport(h, made, extra);
  return { ...report, conversions: made };
}

/** Published as the worker kind of its lease holder id would (`conversion@...` on `dam.internal.jobs.reports.conversion`). */
export const publishReport = (h: Harness, r: JobReport): void => h.nc.publish(jobReportSubject(workerKindOf(r.worker) ?? 'conversion'), JSON.stringify(r));
