import { z } from 'zod';
import { jobCommandSubject, jobReportSubject, JOB_REPORTS_FILTER, type JobWorker } from '../subjects';

const dimension = z.number().int().nonnegative().nullable();

/** One output written by the conversion service (the object is already in storage when this is sent). */
export const completedConversionSchema = z.object({
  object_key: z.string().min(1),
  content_type: z.string().min(1),
  width: dimension,
  height: dimension,
  size: z.number().int().nonnegative(),
});

/**
 * What a conversion job made for one original (identified by its checksum, so metadata can drop a result about
 * an original that has since been replaced) and the keys that failed.
 */
export const conversionsCompletedSchema = z.object({
  id: z.string().min(1),
  asset_id: z.string().min(1),
  group_id: z.string().min(1),
  source_checksum: z.string().min(1),
  image: z.object({ width: z.number().int().nonnegative(), height: z.number().int().nonnegative() }).nullable(),
  conversions: z.record(z.string(), completedConversionSchema),
  errors: z.record(z.string(), z.string()),
  /** Keys not made because they do not apply to this original (a rendition that would upscale), with why. */
  skipped: z.record(z.string(), z.string()).optional(),
  /** What processing read from the original (CONTRACT §14: ColorMode, ColorSpace, exif, thumbhash, phash). */
  metadata: z.record(z.string(), z.unknown()).optional(),
});

/**
 * What a job made of one original (identified by its checksum, so metadata can drop a result about an original that
 * has since been replaced): its outputs by key, the keys that failed, and what it read. The job and asset it belongs
 * to are the report's own `job_id` and `asset_id`.
 */
export const jobOutputsSchema = conversionsCompletedSchema.omit({ id: true, asset_id: true, group_id: true });

const jobId = z.number().int().positive();

const keyList = z.array(z.string());

/**
 * What a processing job's worker reads of the group's settings (CONTRACT §3), taken by metadata when it opens the job
 * and carried with it (jobs.params.settings, handed out again unchanged after a lease runs out): the worker never asks
 * auth at work time, and a job handed out again after a settings change makes what was asked when it was opened.
 * An image's job: `conversions.profile.image`, the `conversions.custom` specs of the keys it makes, `metadata.keep_gps`.
 * A video's: `conversions.profile.video`, `conversions.watermark_asset_id`, `addons.auto.video` (made by transcode).
 * The specs stay as auth stores them: the worker checks each as it always has.
 */
export const jobSettingsSchema = z.object({
  conversions: z
    .object({
      profile: z.object({ image: keyList.optional(), video: keyList.optional() }).optional(),
      custom: z.record(z.string(), z.unknown()).optional(),
      watermark_asset_id: z.string().nullable().optional(),
    })
    .optional(),
  metadata: z.object({ keep_gps: z.boolean().optional() }).optional(),
  addons: z.object({ auto: z.object({ video: keyList.optional() }).optional() }).optional(),
});

/**
 * metadata → worker (through its outbox, in the transaction that opened the job): run job `job_id` on one
 * asset's original. `attempt` grows each time metadata hands the job out again after its lease ran out;
 * `id` (the Nats-Msg-Id) is `job-<job_id>-run-<attempt>`, so one hand-out is stored once.
 */
export const jobCommandSchema = z.object({
  id: z.string().min(1),
  job_id: jobId,
  attempt: z.number().int().nonnegative(),
  type: z.string().min(1),
  group_id: z.string().min(1),
  /** Empty for a job about no single asset (a reissue of callbacks). */
  asset_id: z.string(),
  /** The original the job works on (empty while there is none yet, as for an ingest). */
  source_checksum: z.string(),
  /** Its object key (a replaced original lives next to the first one, `originals/<gid>/<id>-<token>`). */
  source_key: z.string().min(1).optional(),
  content_type: z.string(),
  /** Only these keys (a re-run of some conversions); absent = the group's whole profile. */
  keys: z.array(z.string().min(1)).optional(),
  /**
   * A processing job's settings, as the group had them when the job was opened (jobSettingsSchema). Absent on a job
   * opened by the previous release (a rolling upgrade): its worker then reads the group's settings from auth.
   */
  settings: jobSettingsSchema.optional(),
  /** What else the job was asked for: an ingest's `{key, name}` (the URL or s3:// URI, the file name). */
  params: z.record(z.string(), z.string()).optional(),
  /** A CDN prefetch or purge: the signed links or asset ids it names. */
  urls: z.array(z.string().min(1).max(8192)).max(100).optional(),
  /** A reissue of callbacks: the events of this time range (ISO 8601). */
  range: z.object({ from: z.iso.datetime({ offset: true }), to: z.iso.datetime({ offset: true }) }).optional(),
  /** The user the job's work counts against in usage statistics (who uploaded, or asked). */
  created_by: z.number().int().positive().optional(),
  /** Who asked, for workers that act as the requester (a CDN job reads assets as they may). */
  requested_by: z.object({ user_id: z.number().int().positive(), role_id: z.number().int().positive() }).optional(),
});

/** What an ingest stored (upload → metadata): the original, as an upload registers it. */
export const ingestedFileSchema = z.object({
  object_key: z.string().min(1),
  size: z.number().int().nonnegative(),
  checksum: z.string().regex(/^[a-f0-9]{32}$/),
  content_type: z.string().min(1),
  metadata: z.record(z.string(), z.unknown()),
});

export const JOB_REPORT_STATES = ['STARTED', 'PROGRESS', 'COMPLETED', 'FAILED'] as const;

/**
 * worker → metadata, each worker kind on its own subject (jobReport): STARTED and PROGRESS renew the job's lease (a
 * worker sends one at least every third of the lease while it works), COMPLETED and FAILED end the job.
 * A job that makes outputs says what it made in `outputs`; FAILED says why in `error`.
 */
export const jobReportSchema = z.object({
  id: z.string().min(1),
  job_id: jobId,
  attempt: z.number().int().nonnegative(),
  group_id: z.string().min(1),
  /** Empty for a job about no single asset, as its command. */
  asset_id: z.string(),
  /** Who holds the lease (`conversion@<host>:<pid>`): a report from another holder does not renew it. */
  worker: z.string().min(1).max(200),
  state: z.enum(JOB_REPORT_STATES),
  step: z.string().min(1),
  progress: z.number().int().min(0).max(100),
  /** What the job made (conversion, transcode, an addon that stores a conversion), on COMPLETED and on FAILED. */
  outputs: jobOutputsSchema.optional(),
  /**
   * The same, as workers of the previous release send it (wrapped, with its own ids): accepted for one release so that
   * a rolling upgrade loses no report; new workers send `outputs`.
   */
  conversions: conversionsCompletedSchema.optional(),
  ingested: ingestedFileSchema.optional(),
  /** An addon job's COMPLETED: what the addon found (CONTRACT §6 shapes), kept with the asset by metadata. */
  addon_result: z.object({ addon: z.string().min(1), result: z.record(z.string(), z.unknown()) }).optional(),
  error: z.string().max(4000).optional(),
  /** When the worker took the job: its STARTED may come later (JOB_START_REPORT_DELAY_MS) or not at all. */
  started_at: z.iso.datetime({ offset: true }).optional(),
});

/** Every worker kind's reports, as metadata consumes them (`subject` is the filter `dam.internal.jobs.reports.*`). */
export const JOB_REPORTS = { subject: JOB_REPORTS_FILTER, version: 1, schema: jobReportSchema } as const;

/** Where one worker kind publishes its reports: `dam.internal.jobs.reports.<worker>`, only its identity may. */
export const jobReport = (worker: JobWorker) => ({ subject: jobReportSubject(worker), version: 1, schema: jobReportSchema }) as const;

export const jobCommand = (worker: JobWorker) => ({ subject: jobCommandSubject(worker), version: 1, schema: jobCommandSchema }) as const;

export type ConversionsCompleted = z.infer<typeof conversionsCompletedSchema>;
export type CompletedConversion = z.infer<typeof completedConversionSchema>;
export type JobOutputs = z.infer<typeof jobOutputsSchema>;
export type JobCommand = z.infer<typeof jobCommandSchema>;
export type JobSettings = z.infer<typeof jobSettingsSchema>;
export type JobReport = z.infer<typeof jobReportSchema>;
export type JobReportState = (typeof JOB_REPORT_STATES)[number];
export type IngestedFile = z.infer<typeof ingestedFileSchema>;
