import type { JobOutputs, JobReport, JobWorker } from '@dam/events';
import { unavailable } from '@dam/errors';
import { conversionsPrefix } from '@dam/storage';
import { isImage, type Asset, type StoredConversion } from '../domain/asset';
import { addonResultsAfter } from '../domain/addon-labels';
import { CONVERSION_ADDONS } from './addons.use-case';
import { describeErrors, startedBy, type Job, type JobType } from '../domain/job';
import { isOwnConversionKey } from '../domain/object-keys';
import type { RunInTransaction, Tx } from '../domain/ports';
import { finishIngest } from './ingest.use-case';
import { publicSourceOf } from './public-access.use-case';
import { openAutoAddons, settleAsset, type AutoAddonsOf } from '../domain/processing';

export type ReportOutcome =
  'renewed' | 'not-holder' | 'duplicate' | 'unknown-job' | 'job-ended' | 'stale' | 'foreign-object-key' | 'wrong-worker' | 'recorded' | 'processed' | 'failed';

const groupOf = (report: JobReport): number | undefined => {
  const id = Number(report.group_id);
  return Number.isSafeInteger(id) ? id : undefined;
};

/**
 * Applies one worker report. STARTED and PROGRESS renew the job's lease and progress. COMPLETED and FAILED end
 * the job, record what it made, and let the asset's status follow its jobs. Idempotent twice over: the report
 * id is claimed in the same transaction as the change, and a job ends only once.
 * `from` is the worker kind whose identity published the report (its subject says, as only that identity may publish
 * it): a report about a job of another kind (a conversion worker completing an addon job) changes nothing.
 */
export interface ReportDeps {
  /** The group's automatic addons (`addons.auto.image`): opened with an ingested original's processing, after an undelete's. */
  autoAddons?: AutoAddonsOf;
}

/**
 * What a report says its job made: `outputs`, or the wrapped form workers of the previous release send (accepted for
 * one release), whose own ids must name the report's asset and group; 'foreign' when they do not.
 */
export function outputsOf(report: JobReport): JobOutputs | undefined | 'foreign' {
  if (report.outputs) return report.outputs;
  const legacy = report.conversions;
  if (!legacy) return undefined;
  if (legacy.asset_id !== report.asset_id || legacy.group_id !== report.group_id) return 'foreign';
  const { id: _id, asset_id: _asset, group_id: _group, ...outputs } = legacy;
  return outputs;
}

/** How one job kind's final report is applied, in the transaction that claimed it, the job locked and still open. */
type FinishJob = (tx: Tx, job: Job, report: JobReport, made: JobOutputs | undefined, deps: ReportDeps) => Promise<ReportOutcome>;

/** Every job kind a worker runs (bulk delete and purge are run by metadata itself), and how its end is applied. */
const FINISH: Record<Exclude<JobType, 'bulk_delete' | 'purge'>, FinishJob> = {
  processing: finishProcessing,
  ingest: (tx, job, report, _made, deps) => finishIngest(tx, job, report, deps.autoAddons),
  addon: finishAddon,
  cdn_prefetch: finishWithoutAsset,
  cdn_purge: finishWithoutAsset,
  reissue_callbacks: finishWithoutAsset,
};

export async function applyJobReport(runInTransaction: RunInTransaction, report: JobReport, from: JobWorker, deps: ReportDeps = {}): Promise<ReportOutcome> {
  const groupId = groupOf(report);
  if (groupId === undefined) return 'unknown-job';
  if (report.state === 'STARTED' || report.state === 'PROGRESS') {
    return runInTransaction(async (tx) => {
      const job = await tx.jobs.findForUpdate(groupId, report.job_id);
      if (job && job.worker !== from) return 'wrong-worker';
      const renewed = await tx.jobs.renew(groupId, report.job_id, {
        worker: report.worker,
        progress: report.progress,
        step: report.step,
        ...startedBy(report),
      });
      return renewed ? 'renewed' : 'not-holder';
    });
  }
  // Whatever the bus carries: outputs must lie under this asset's own prefix for this original, or the report
  // could make another asset's (another group's) object downloadable here. Nothing of such a report is kept.
  const made = outputsOf(report);
  if (made === 'foreign') return 'foreign-object-key';
  const foreign = Object.values(made?.conversions ?? {}).some((c) => !isOwnConversionKey(groupId, report.asset_id, made?.source_checksum ?? '', c.object_key));
  if (foreign) return 'foreign-object-key';

  return runInTransaction(async (tx) => {
    await lockReportedAsset(tx, groupId, report);
    const job = await tx.jobs.findForUpdate(groupId, report.job_id);
    // Before the id is claimed: a final report's id is known in advance (`job-<id>-done`), and another kind's forgery
    // must not use it up ahead of the real report.
    if (job && job.worker !== from) return 'wrong-worker';
    if (!(await tx.messages.claim(report.id))) return 'duplicate';
    // A report names one of the job's assets, or none for a job without any (a reissue).
    if (!job || !(job.assetIds.includes(report.asset_id) || (job.assetIds.length === 0 && report.asset_id === ''))) return 'unknown-job';
    if (job.status === 'COMPLETED' || job.status === 'ERROR') {
      await discardOutputsOfTrashed(tx, groupId, report.asset_id);
      return 'job-ended';
    }
    const finish = FINISH[job.type as keyof typeof FINISH] as FinishJob | undefined;
    // A job metadata runs itself (bulk delete, purge) is never reported on by a worker.
    if (!finish) return 'wrong-worker';
    return finish(tx, job, report, made, deps);
  });
}

/**
 * One lock order for an asset and its jobs, everywhere: the asset's row first, then the job's. Delete, Replace,
 * Process, Undelete and Purge lock the asset and then end or open its jobs; a final report that locked its job first
 * and then the asset deadlocked with a Delete of the same asset (issue 35: PostgreSQL 40P01, the Delete answered 500).
 * A report naming no asset (a reissue) has none to lock; one naming an asset that is not its job's locks a row of
 * its own group for the length of a transaction that changes nothing.
 */
async function lockReportedAsset(tx: Tx, groupId: number, report: JobReport): Promise<void> {
  if (report.asset_id) await tx.assets.findForUpdate(groupId, report.asset_id);
}

/** A job about no asset's outputs (CDN prefetch or purge, a reissue): only the job ends. */
async function finishWithoutAsset(tx: Tx, job: Job, report: JobReport): Promise<ReportOutcome> {
  await tx.jobs.finish(
    job.groupId,
    job.id,
    report.state === 'FAILED'
      ? { status: 'ERROR', error: report.error ?? `the ${job.type} job failed`, ...startedBy(report) }
      : { status: 'COMPLETED', ...(report.error ? { error: report.error } : {}), ...startedBy(report) },
  );
  return 'recorded';
}

/**
 * A processing job (conversion, transcode) ended: what it made is recorded with the asset, the job ends, and the
 * asset's status follows its round's jobs (settleAsset).
 */
async function finishProcessing(tx: Tx, job: Job, report: JobReport, made: JobOutputs | undefined, deps: ReportDeps): Promise<ReportOutcome> {
  const groupId = job.groupId;
  const asset = await tx.assets.findForUpdate(groupId, report.asset_id);
  if (!asset) return 'unknown-job';

  // A result about an original that has since been replaced describes outputs nobody should see. The job
  // stays open: if it is still this original's job, its lease runs out and it is handed out again.
  if (made && made.source_checksum !== asset.checksum) return 'stale';
  if (made) await recordOutputs(tx, asset, made);

  // An upload taken while the group's settings could not be read: its automatic addons open now, before it may settle.
  if (job.params.autoAddonsDeferred && asset.status === 'NOT_READY' && isImage(asset.contentType) && deps.autoAddons) {
    const auto = await deps.autoAddons(groupId, asset.contentType);
    // Still unreadable: the report is applied later (the consumer retries it), never settled without them.
    if (auto.deferred) throw unavailable(`the settings of group ${groupId} cannot be read: the automatic addons of ${asset.id} wait`, 'SETTINGS_UNAVAILABLE');
    await openAutoAddons(tx, asset, auto, job.createdBy ?? asset.creatorId);
  }

  const errors = made?.errors ?? {};
  if (report.state === 'FAILED') {
    const failed = Object.keys(errors).length > 0 ? errors : { original: report.error ?? 'processing failed' };
    await tx.jobs.finish(groupId, job.id, { status: 'ERROR', error: report.error ?? describeErrors(failed), ...startedBy(report) });
    return (await settleAsset(tx, groupId, asset.id, failed)) === 'failed' ? 'failed' : 'recorded';
  }
  const partial = Object.keys(errors).length > 0 ? describeErrors(errors) : undefined;
  await tx.jobs.finish(groupId, job.id, {
    status: 'COMPLETED',
    ...(partial ? { error: partial } : {}),
    ...(made?.skipped ? { skipped: made.skipped } : {}),
    ...startedBy(report),
  });
  const settled = await settleAsset(tx, groupId, asset.id);
  // An undelete re-makes a live asset's profile outputs; the group's automatic addons run again after them. (An
  // upload's, replace's or ingest's were opened with its processing: the asset was NOT_READY, and is OK only now.)
  if (!job.params.keys && asset.status !== 'NOT_READY' && isImage(asset.contentType) && deps.autoAddons) {
    await openAutoAddons(tx, asset, await deps.autoAddons(groupId, asset.contentType), job.createdBy ?? asset.creatorId);
  }
  if (settled === 'processed') return 'processed';
  // A requested run (`process`, undelete) on a live asset: its outputs exist now, so subscribers hear it.
  if (settled === 'unchanged' && asset.status !== 'NOT_READY') {
    const now = await tx.assets.findById(groupId, asset.id);
    if (now) await tx.events.write('file-processed', now);
  }
  return 'recorded';
}

async function recordOutputs(tx: Tx, asset: Asset, made: JobOutputs): Promise<void> {
  const entries = Object.entries(made.conversions);
  if (entries.length === 0 && !made.image && !made.metadata) return;
  const conversions: Record<string, StoredConversion> = { ...asset.conversions };
  for (const [key, c] of entries) {
    conversions[key] = {
      width: c.width,
      height: c.height,
      size: c.size,
      // A re-conversion must not undo Set Public Access.
      public: asset.conversions[key]?.public ?? false,
      object_key: c.object_key,
      content_type: c.content_type,
    };
  }
  // What processing read (ColorMode, exif, thumbhash, phash...) joins what the upload read; the upload's size stays.
  const metadata = { ...(made.metadata ?? {}), ...asset.metadata };
  if (made.image) {
    metadata.width ??= made.image.width;
    metadata.height ??= made.image.height;
  }
  // The delivery rendition is what on-demand image delivery starts from (spec: `ON_DEMAND_IMAGE`); a conversion
  // addon (storyboard, background_removal) is available once its conversion exists.
  const available = Object.keys(made.conversions).filter((key) => CONVERSION_ADDONS.has(key));
  if (conversions.smart_imaging) available.push('ON_DEMAND_IMAGE');
  const addonsInfo = available.length > 0 ? { ...asset.addonsInfo, ...Object.fromEntries(available.map((key) => [key, { available: true }])) } : undefined;
  await tx.assets.saveConversions(asset.groupId, asset.id, conversions, metadata, addonsInfo);
  // A public key made again keeps its public URL, with the new bytes: its copy is made again.
  const remade = entries.flatMap(([key]) => (Object.hasOwn(asset.publicUrls, key) ? [publicSourceOf({ objectKey: asset.objectKey, conversions }, key)] : []));
  await tx.publicObjects.refresh(
    asset.groupId,
    asset.id,
    remade.filter((s) => s !== undefined),
  );
}

/**
 * Moving an asset to the trash ends its open jobs and queues every output for deletion, but a worker that had already
 * taken the job keeps going and writes its outputs after that deletion ran (the kill scenario of issue 14 found
 * thumbnails of trashed assets left in the bucket, owned by no record). Its report, ignored otherwise, queues them
 * again. Undelete drops queued deletions under the prefix before it has the outputs made again, and the asset's lock
 * orders this against it.
 */
async function discardOutputsOfTrashed(tx: Tx, groupId: number, assetId: string): Promise<void> {
  const asset = await tx.assets.findForUpdate(groupId, assetId);
  if (asset?.deletedAt) await tx.deletions.enqueue([conversionsPrefix(String(groupId), assetId)]);
}

/**
 * A final report that could not be applied after every retry: the job ends in ERROR and the asset must not
 * stay NOT_READY for ever (subscribers hear file-processed with status ERROR) unless it already left it.
 */
export async function failUnappliedReport(runInTransaction: RunInTransaction, report: JobReport, from: JobWorker): Promise<boolean> {
  const groupId = groupOf(report);
  if (groupId === undefined || (report.state !== 'COMPLETED' && report.state !== 'FAILED')) return false;
  return runInTransaction(async (tx) => {
    await lockReportedAsset(tx, groupId, report);
    const job = await tx.jobs.findForUpdate(groupId, report.job_id);
    if (!job || job.worker !== from || !job.assetIds.includes(report.asset_id)) return false;
    const made = outputsOf(report);
    const errors = {
      ...(made && made !== 'foreign' ? made.errors : {}),
      [job.type === 'addon' ? (job.params.keys?.[0] ?? 'addon') : 'conversions']: 'the job report could not be recorded',
    };
    const ended = await tx.jobs.finish(groupId, job.id, { status: 'ERROR', error: describeErrors(errors) });
    if (!ended) return false;
    await settleAsset(tx, groupId, report.asset_id, errors);
    return true;
  });
}

/**
 * An addon run ended: its result is kept with the asset (the addon marked available); a failure ends the job ERROR
 * with the reason. A run on request (an OK asset) is announced by `addon-processed` and its failure leaves the asset
 * as it was. An automatic addon of an upload's round (a NOT_READY asset) is part of its processing (CONTRACT §16):
 * its failure is the asset's (`errors.<addon>`), and the round's one `file-processed` announces its result.
 */
async function finishAddon(tx: Tx, job: Job, report: JobReport, made: JobOutputs | undefined): Promise<ReportOutcome> {
  const addon = job.params.keys?.[0] ?? '';
  const fail = async (error: string): Promise<ReportOutcome> => {
    await tx.jobs.finish(job.groupId, job.id, { status: 'ERROR', error, ...startedBy(report) });
    await settleAsset(tx, job.groupId, report.asset_id, { [addon]: error });
    return 'failed';
  };
  if (report.state === 'FAILED' || !report.addon_result || report.addon_result.addon !== addon)
    return fail(report.error ?? `the ${addon} addon reported no result`);
  const current = await tx.assets.findForUpdate(job.groupId, report.asset_id);
  if (!current) return fail('the asset no longer exists');
  if (CONVERSION_ADDONS.has(addon)) {
    // Its result is a conversion of the original it read: kept only while that original is still the asset's.
    if (!made?.conversions[addon]) return fail(`the ${addon} addon reported no conversion`);
    if (current.deletedAt || made.source_checksum !== current.checksum) {
      await discardOutputsOfTrashed(tx, job.groupId, report.asset_id);
      return fail(`the asset changed while the ${addon} addon ran: run it again`);
    }
    await recordOutputs(tx, current, made);
  }
  const results = addonResultsAfter(current.addonResults, addon, report.addon_result.result);
  const asset = await tx.assets.saveAddonResult(job.groupId, report.asset_id, addon, results);
  await tx.jobs.finish(job.groupId, job.id, { status: 'COMPLETED', ...startedBy(report) });
  if (current.status === 'NOT_READY') {
    const settled = await settleAsset(tx, job.groupId, current.id);
    return settled === 'unchanged' ? 'recorded' : settled;
  }
  if (asset && !asset.deletedAt) await tx.events.write('addon-processed', asset);
  return 'recorded';
}
