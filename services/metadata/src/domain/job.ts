import type { JobReport, JobSettings, JobWorker } from '@dam/events';

export const JOB_STATUSES = ['QUEUED', 'IN_PROGRESS', 'COMPLETED', 'ERROR'] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];

/** A report's word on when its worker took the job: a short job sends no STARTED, a longer one sends it late. */
export const startedBy = (report: JobReport): { startedAt?: string } => (report.started_at ? { startedAt: report.started_at } : {});

/**
 * `processing`: the profile's conversions or transcodes of a new, replaced or restored original; `ingest`: the
 * download of an original from a URL (by upload); `bulk_delete` and `purge`: run by metadata itself, over many
 * assets; `cdn_prefetch` and `cdn_purge`: the edge's byte cache filled or emptied (by link-signing);
 * `reissue_callbacks`: the webhooks of a time range sent again (by webhook; no asset); `addon`: one addon run on one
 * asset (by addon): an automatic addon opened with the processing of a new, replaced or ingested original is part of
 * its round (the asset is OK only once it has ended, CONTRACT §16), a run on request is not.
 */
export const JOB_TYPES = ['processing', 'ingest', 'bulk_delete', 'purge', 'cdn_prefetch', 'cdn_purge', 'reissue_callbacks', 'addon'] as const;
export type JobType = (typeof JOB_TYPES)[number];

export interface JobStep {
  name: string;
  status: JobStatus;
  started_at: string | null;
  finished_at: string | null;
}

export interface Job {
  id: number;
  groupId: number;
  type: JobType;
  /** The worker kind the job is handed to (`conversion`, ...); null when metadata runs it itself. */
  worker: JobWorker | null;
  params: JobParams;
  /** Hand-outs after the first (a lease that ran out hands the job out again). */
  attempts: number;
  status: JobStatus;
  assetIds: string[];
  steps: JobStep[];
  progress: number;
  error: string | null;
  /** Outputs a processing job did not make because they do not apply (a rendition that would upscale). */
  skipped: Record<string, string>;
  createdBy: number | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface NewJob {
  groupId: number;
  type: JobType;
  worker: JobWorker | null;
  params?: JobParams;
  assetIds: string[];
  steps: readonly string[];
  createdBy: number;
}

/** What a job was asked for beyond its assets. */
export interface JobParams {
  /** Conversion keys of a re-run; absent: the group's whole profile. */
  keys?: string[];
  /** An ingest's source (https URL or s3:// URI) and file name. */
  source?: string;
  name?: string;
  /** A CDN job's signed links or asset ids, and the role of the user who asked (the worker reads as them). */
  urls?: string[];
  roleId?: number;
  /** A reissue's time range (ISO 8601). */
  range?: { from: string; to: string };
  /**
   * A processing job's part of the group's settings, as they were when it was opened (jobSettingsOf): every hand-out
   * of the job carries them, so its worker never reads settings and a re-run is reproducible. Absent on jobs of the
   * previous release (their worker reads the settings).
   */
  settings?: JobSettings;
  /**
   * The group's settings could not be read when the job was opened (auth unreachable): the upload was taken all the
   * same, and the automatic addons are opened when this job reports, before the asset can settle.
   */
  autoAddonsDeferred?: boolean;
}

/**
 * Jobs about the edge's cache or the webhooks, and addon runs: they change no asset's status on their own (an
 * automatic addon's end settles its asset through the addon's path), and each is one command whatever its assets
 * (a reissue has none).
 */
export const changesNoAsset = (job: Pick<Job, 'type'>): boolean =>
  job.type === 'cdn_prefetch' || job.type === 'cdn_purge' || job.type === 'reissue_callbacks' || job.type === 'addon';

/** Whether the job's work is done by metadata itself (no worker kind). */
export const LOCAL_JOB_TYPES: readonly JobType[] = ['bulk_delete', 'purge'];

/**
 * How long a job may go without news before it is handed out again: `queuedMs` while no worker has started it
 * (the command may wait behind others), `leaseMs` once one has (workers renew it with every report).
 */
export interface JobTimings {
  queuedMs: number;
  leaseMs: number;
  /** Hand-outs before the job ends in ERROR. */
  maxAttempts: number;
}

export const DEFAULT_JOB_TIMINGS: JobTimings = { queuedMs: 10 * 60_000, leaseMs: 60_000, maxAttempts: 3 };

/** A job's `error`: what failed, per key. */
export const describeErrors = (errors: Record<string, string>): string =>
  Object.entries(errors)
    .map(([key, why]) => `${key}: ${why}`)
    .join('; ');

/** CONTRACT §6 job record. */
export interface JobView {
  job_id: number;
  type: JobType;
  status: JobStatus;
  asset_ids: string[];
  steps: JobStep[];
  progress: number;
  created_at: string;
  updated_at: string;
  error: string | null;
  /** Present when outputs were not made because they do not apply: key → why. */
  skipped?: Record<string, string>;
  /** A bulk delete that keeps its data export: where to get it (`/api/v1/jobs/{job_id}/export`). */
  export_url?: string;
}

/** A step's time as the job's own are written (`…T…:….123Z`): the database keeps them in JSON with microseconds. */
const stepTime = (t: string | null): string | null => (t === null ? null : new Date(t).toISOString());

export const toJobView = (j: Job): JobView => ({
  job_id: j.id,
  type: j.type,
  status: j.status,
  asset_ids: j.assetIds,
  steps: j.steps.map((s) => ({ ...s, started_at: stepTime(s.started_at), finished_at: stepTime(s.finished_at) })),
  progress: j.progress,
  created_at: j.createdAt.toISOString(),
  updated_at: j.updatedAt.toISOString(),
  error: j.error,
  ...(Object.keys(j.skipped).length > 0 ? { skipped: j.skipped } : {}),
});
