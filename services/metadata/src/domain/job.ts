export const JOB_STATUSES = ['QUEUED', 'IN_PROGRESS', 'COMPLETED', 'ERROR'] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];

/** `processing`: the profile's conversions of a new original (transcodes and addons join it later). */
export const JOB_TYPES = ['processing'] as const;
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
  status: JobStatus;
  assetIds: string[];
  steps: JobStep[];
  progress: number;
  error: string | null;
  createdBy: number | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface NewJob {
  groupId: number;
  type: JobType;
  assetIds: string[];
  steps: string[];
  createdBy: number;
}

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
}

export const toJobView = (j: Job): JobView => ({
  job_id: j.id,
  type: j.type,
  status: j.status,
  asset_ids: j.assetIds,
  steps: j.steps,
  progress: j.progress,
  created_at: j.createdAt.toISOString(),
  updated_at: j.updatedAt.toISOString(),
  error: j.error,
});
