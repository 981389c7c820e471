import type { Readable } from 'node:stream';
import type { AssetData } from '@dam/events';

/**
 * Delete - Bulk's data export (spec: "Each deleted asset raises a deletion callback (and a database export where
 * configured)"): with the group setting `bulk_delete.export`, the job gets the step `export` and keeps the record
 * of each asset it trashed, as it was just before (the asset data format), one JSON line each. Written batch by
 * batch while the job runs, never gathered in memory; read back through `GET /api/v1/jobs/{job_id}/export`.
 */
export const EXPORT_STEP = 'export';

export interface DeletedRecordExports {
  /** One batch's records as part `part` of the job's export (a batch run again writes its part again, whole). */
  writePart(groupId: number, jobId: number, part: number, records: readonly AssetData[]): Promise<void>;
  /** The job's parts in order, as one stream of JSON lines (empty when no asset was trashed). */
  open(groupId: number, jobId: number): Promise<Readable>;
}

/** Metadata's own prefix in the bucket (deploy/k8s/object-store.ts lets only metadata write and read it). */
export const exportPrefix = (groupId: number, jobId: number): string => `exports/${groupId}/bulk-delete-${jobId}/`;
