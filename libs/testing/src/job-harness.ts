import { createHash } from 'node:crypto';
import { jetstream, type JetStreamClient } from '@nats-io/jetstream';
import {
  connectNats,
  DAM_INTERNAL,
  ensureStreams,
  jobCommand,
  JOB_REPORTS,
  jobReportSubject,
  publishEvent,
  type JobOutputs,
  type JobCommand,
  type JobReport,
  type JobWorker,
} from '@dam/events';
import { createStorage, originalKey, type Storage } from '@dam/storage';
import { startNats, type TestNats } from './nats-server';
import { createBucket, s3Env, testS3Config } from './s3-bucket';
import { serviceIdentities, type ServiceIdentities } from './service-identities';
import { waitFor } from './wait-for';

type Nc = Awaited<ReturnType<typeof connectNats>>;

/**
 * A worker service's world without metadata: real NATS with the streams, a fresh bucket, job commands published
 * as metadata's outbox would, and every job report stored on DAM_INTERNAL, in order.
 */
/** A final report's `outputs`, with the asset it is about. */
export type ReportedOutputs = JobOutputs & { asset_id: string };

export interface JobHarness {
  identities: ServiceIdentities;
  nats: TestNats;
  nc: Nc;
  js: JetStreamClient;
  storage: Storage;
  bucket: string;
  /** Every job report (STARTED, PROGRESS, COMPLETED, FAILED). */
  jobReports: JobReport[];
  /** What the final reports say was made, one per COMPLETED or FAILED report. */
  reports: ReportedOutputs[];
  env(extra?: Record<string, string>): Record<string, string>;
  putOriginal(groupId: string, assetId: string, bytes: Buffer): Promise<string>;
  /** Hands the service a job for the asset, as metadata's outbox would; returns the job id. */
  publishJob(groupId: string, assetId: string, file: { checksum: string; contentType: string }, extra?: Partial<JobCommand>): Promise<number>;
  /** What the first final report about the asset says was made (its `outputs`, with the report's asset id). */
  reportFor(assetId: string, timeoutMs?: number): Promise<ReportedOutputs>;
  finalReportFor(assetId: string, timeoutMs?: number): Promise<JobReport>;
  /** The final report of one job (an asset's later job, where finalReportFor gives its first). */
  finalReportOfJob(jobId: number, timeoutMs?: number): Promise<JobReport>;
  close(): Promise<void>;
}

export async function startJobHarness(worker: JobWorker, identities: ServiceIdentities = serviceIdentities()): Promise<JobHarness> {
  const nats = await startNats();
  const nc = await connectNats(nats.url, `${worker}-test`, nats.seed('admin'));
  await ensureStreams(nc);
  const js = jetstream(nc);
  const bucket = await createBucket(worker);
  const storage = createStorage(testS3Config(bucket));

  // An ordered consumer sees what the stream stored: a report de-duplicated by Nats-Msg-Id appears once.
  const reports: ReportedOutputs[] = [];
  const jobReports: JobReport[] = [];
  // No server-side filter: filter_subjects needs nats-server 2.10 and Debian ships 2.9.
  const ordered = await js.consumers.get(DAM_INTERNAL);
  const messages = await ordered.consume();
  void (async () => {
    for await (const m of messages) {
      if (m.subject !== jobReportSubject(worker)) continue;
      const r = JOB_REPORTS.schema.parse(m.json());
      jobReports.push(r);
      if ((r.state === 'COMPLETED' || r.state === 'FAILED') && r.outputs) reports.push({ asset_id: r.asset_id, ...r.outputs });
    }
  })();
  let nextJobId = 1;
  const commands = jobCommand(worker);

  /** The first COMPLETED or FAILED report that `matches`. */
  const finalReport = (matches: (r: JobReport) => boolean, description: string, timeoutMs: number) =>
    waitFor(() => jobReports.find((r) => matches(r) && (r.state === 'COMPLETED' || r.state === 'FAILED')), { timeoutMs, description });
  return {
    identities,
    nats,
    nc,
    js,
    storage,
    bucket,
    jobReports,
    reports,
    env: (extra = {}) => ({
      ...nats.env(worker),
      SERVICE_KEY: identities.privateKey(worker),
      SERVICE_TRUSTED_KEYS: identities.trustedKeys(),
      ...s3Env(bucket),
      OTEL_SDK_DISABLED: 'true',
      ...extra,
    }),
    async putOriginal(groupId, assetId, bytes) {
      await storage.putBuffer(originalKey(groupId, assetId), bytes, { contentType: 'application/octet-stream' });
      return createHash('md5').update(bytes).digest('hex');
    },
    async publishJob(groupId, assetId, file, extra = {}) {
      const jobId = extra.job_id ?? nextJobId++;
      const command: JobCommand = {
        id: `job-${jobId}-run-0`,
        job_id: jobId,
        attempt: 0,
        type: 'processing',
        group_id: groupId,
        asset_id: assetId,
        source_checksum: file.checksum,
        content_type: file.contentType,
        ...extra,
      };
      await publishEvent(js, commands.subject, commands.schema, command, { msgId: command.id });
      return jobId;
    },
    reportFor: (assetId, timeoutMs = 30_000) => waitFor(() => reports.find((r) => r.asset_id === assetId), { timeoutMs, description: `report for ${assetId}` }),
    finalReportFor: (assetId, timeoutMs = 30_000) => finalReport((r) => r.asset_id === assetId, `final report for ${assetId}`, timeoutMs),
    finalReportOfJob: (jobId, timeoutMs = 30_000) => finalReport((r) => r.job_id === jobId, `final report of job ${jobId}`, timeoutMs),
    async close() {
      messages.stop();
      await nc.drain();
      await nats.stop();
    },
  };
}
