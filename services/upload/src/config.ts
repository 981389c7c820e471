import { z } from 'zod';
import { serviceKeyEnv } from '@dam/auth-tokens';
import { baseEnv, dbEnv, edgeLimitEnv, jobWorkerEnv, jwtEnv, loadConfig, natsEnv, positiveInt, s3Env, serviceUrl } from '@dam/config';

const MiB = 1024 * 1024;

export const configSchema = z.object({
  ...baseEnv(8081),
  ...s3Env,
  ...natsEnv,
  /** Idempotency-Key (CONTRACT §13): the kept responses, shared by every replica (table idempotency_keys). */
  ...dbEnv,
  /** How often expired Idempotency-Key responses are removed from the database. */
  IDEMPOTENCY_SWEEP_INTERVAL_MS: positiveInt(10 * 60_000),
  ...jwtEnv,
  ...serviceKeyEnv('upload'),
  /** How long the edge reuses a JWT user's status from auth: the delay before disabling a user applies. */
  USER_STATUS_TTL_MS: z.coerce.number().int().min(0).default(10_000),
  AUTH_URL: serviceUrl(8090),
  METADATA_URL: serviceUrl(8091),
  /** Largest request body accepted (CONTRACT §4: default 5 GiB). */
  MAX_UPLOAD_BYTES: positiveInt(5 * 1024 * MiB),
  /**
   * Multipart part size towards S3: the minio client holds one part in memory per file being uploaded, so
   * this bounds memory per concurrent upload. 5 MiB is S3's minimum; 10,000 parts then allow ~48 GiB.
   */
  UPLOAD_PART_SIZE: z.coerce
    .number()
    .int()
    .min(5 * MiB)
    .default(5 * MiB),
  /** ffprobe reads a stored video's metadata for the upload result (the same tools as transcode's). */
  FFMPEG_PATH: z.string().min(1).default('ffmpeg'),
  FFPROBE_PATH: z.string().min(1).default('ffprobe'),
  /**
   * A pending-upload entry not refreshed for this long belongs to a dead process; its object is removed unless
   * metadata has the asset. Live requests refresh their entries every third of it.
   */
  ORPHAN_GRACE_MS: z.coerce
    .number()
    .int()
    .min(100)
    .default(15 * 60_000),
  /** No byte of an upload's body for this long (while we could read) abandons it with 408; 0 = never. */
  UPLOAD_IDLE_TIMEOUT_MS: z.coerce.number().int().min(0).default(30_000),
  /** Uploads at once per user or API key; 429 beyond; 0 = no cap. */
  UPLOAD_MAX_CONCURRENT_PER_PRINCIPAL: z.coerce.number().int().min(0).default(8),
  ...edgeLimitEnv({ perMinute: 600, burst: 100, addressPerMinute: 3000, addressBurst: 300 }),
  /** Ingest from URI (CONTRACT §4, §11): hosts the outbound guard lets through, plain http included. */
  INGEST_ALLOW_HOSTS: z.string().default(''),
  /** Buckets `s3://` URIs may name (read with this service's S3 credentials); the asset bucket never. */
  INGEST_S3_BUCKETS: z.string().default(''),
  INGEST_CONNECT_TIMEOUT_MS: z.coerce.number().int().min(100).default(10_000),
  INGEST_IDLE_TIMEOUT_MS: z.coerce.number().int().min(100).default(30_000),
  /** Downloads per minute from one host (token bucket; 0 = no limit), and the burst. */
  INGEST_RATE_PER_MINUTE: z.coerce.number().int().min(0).default(60),
  INGEST_RATE_BURST: z.coerce.number().int().min(1).default(10),
  /** Ingest downloads at once in this process. */
  INGEST_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(4),
  INGEST_ACK_WAIT_MS: z.coerce.number().int().min(1000).default(60_000),
  INGEST_MAX_DELIVER: z.coerce.number().int().min(1).default(3),
  /** How often a running ingest renews its job's lease at metadata. */
  JOB_HEARTBEAT_MS: z.coerce.number().int().min(100).default(10_000),
  JOB_PROGRESS_INTERVAL_MS: jobWorkerEnv.JOB_PROGRESS_INTERVAL_MS,
  JOB_START_REPORT_DELAY_MS: jobWorkerEnv.JOB_START_REPORT_DELAY_MS,
  /** Resumable uploads (tus, CONTRACT §12): an unfinished upload expires this long after its creation. */
  TUS_EXPIRY_MS: z.coerce
    .number()
    .int()
    .min(1000)
    .default(24 * 3600_000),
  /** How often expired uploads are swept from the store (their parts, state and any leftover). */
  TUS_SWEEP_INTERVAL_MS: z.coerce
    .number()
    .int()
    .min(100)
    .default(10 * 60_000),
  /** Parts of a resumable upload in the store (S3 multipart: at least 5 MiB). */
  TUS_PART_SIZE: z.coerce
    .number()
    .int()
    .min(5 * MiB)
    .default(8 * MiB),
  /**
   * A resumable upload's lease (table tus_locks): renewed every third of this while a request writes it; a replica
   * that died holding one frees it this long after its last renewal.
   */
  TUS_LOCK_TTL_MS: z.coerce.number().int().min(300).default(30_000),
  /**
   * Parts of resumable uploads being filled or sent to S3 at once in this process (each a file of TUS_PART_SIZE in
   * the temp folder): with 8 MiB parts, 60 take 480 MiB of /tmp (k8s/ sizes upload's /tmp to the default).
   */
  TUS_PARTS_IN_FLIGHT: z.coerce.number().int().min(1).max(1000).default(60),
  /** Origins browsers may upload from (comma-separated), or `*`: credentials travel in headers, never cookies. */
  CORS_ALLOWED_ORIGINS: z.string().default('*'),
  /** How often the orphan reaper looks for stale entries. */
  ORPHAN_REAP_INTERVAL_MS: z.coerce.number().int().min(100).default(60_000),
});

export type UploadConfig = z.infer<typeof configSchema>;

export const loadUploadConfig = (env: NodeJS.ProcessEnv = process.env): UploadConfig => loadConfig(configSchema, env);
