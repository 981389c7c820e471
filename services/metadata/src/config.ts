import { z } from 'zod';
import { serviceKeyEnv, trustedKeysEnv } from '@dam/auth-tokens';
import { baseEnv, dbEnv, groupSettingsEnv, loadConfig, natsEnv, positiveInt, s3Env, serviceUrl } from '@dam/config';

export const configSchema = z.object({
  ...baseEnv(8091),
  ...dbEnv,
  ...natsEnv,
  ...s3Env,
  ...trustedKeysEnv,
  ...serviceKeyEnv('metadata'),
  /** Group settings (bulk delete limits) come from auth. */
  AUTH_URL: serviceUrl(8090),
  /** On-demand image transforms are made by the conversion service. */
  CONVERSION_URL: serviceUrl(8093),
  /** How long `process`, addon requests and bulk deletes reuse a group's settings. */
  ...groupSettingsEnv,
  /** How often queued object-store deletions (delete, purge, replace) are carried out. */
  OBJECT_DELETIONS_INTERVAL_MS: z.coerce.number().int().min(50).default(1_000),
  /**
   * A failing removal is retried after OBJECT_DELETION_BACKOFF_MS, doubling up to an hour; after
   * OBJECT_DELETION_MAX_ATTEMPTS failures its Delete's file-deleted says ERROR (the removal goes on hourly).
   */
  OBJECT_DELETION_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(100).default(10),
  OBJECT_DELETION_BACKOFF_MS: z.coerce.number().int().min(10).default(2_000),
  /** How often the bytes stored per group and user are measured for usage statistics (`storage_bytes`, daily). */
  STORAGE_GAUGE_INTERVAL_MS: z.coerce.number().int().min(100).default(86_400_000),
  /** How long a replaced original stays in the bucket for downloads that were already streaming it. */
  REPLACED_ORIGINAL_GRACE_MS: z.coerce
    .number()
    .int()
    .nonnegative()
    .default(10 * 60_000),
  /** How often queued Update Data requests are applied. */
  DATA_UPDATES_INTERVAL_MS: z.coerce.number().int().min(20).default(200),
  /** How often public copies left pending (an older install's, a failed or interrupted copy) are made. */
  PUBLIC_POLICY_INTERVAL_MS: z.coerce.number().int().min(50).default(1_000),
  /** How often the store's public prefix is compared with the database: folders no public key names are removed. */
  PUBLIC_SWEEP_INTERVAL_MS: z.coerce
    .number()
    .int()
    .min(1_000)
    .default(10 * 60_000),
  /** Largest file Add Conversion accepts. */
  MAX_UPLOAD_BYTES: positiveInt(5 * 1024 ** 3),
  /** How often metadata looks for its own queued jobs (bulk delete, purge). */
  LOCAL_JOBS_INTERVAL_MS: z.coerce.number().int().min(50).default(1_000),
  /** Job reports (progress and results of workers) handled at once. */
  JOB_REPORTS_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(4),
  /** A job no worker has started within this long is handed out again. */
  JOB_QUEUED_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(100)
    .default(10 * 60_000),
  /** A started job whose worker sent nothing for this long is handed out again (workers report every ~10 s). */
  JOB_LEASE_MS: z.coerce.number().int().min(100).default(60_000),
  /** Hand-outs of one job before it ends in ERROR. */
  JOB_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(100).default(3),
  /** How often expired leases are looked for. */
  JOB_SWEEP_INTERVAL_MS: z.coerce.number().int().min(50).default(5_000),
});

export type MetadataConfig = z.infer<typeof configSchema>;

export const loadMetadataConfig = (env: NodeJS.ProcessEnv = process.env): MetadataConfig => loadConfig(configSchema, env);
