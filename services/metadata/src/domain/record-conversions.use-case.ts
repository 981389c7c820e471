import type { ConversionsCompleted } from '@dam/events';
import type { StoredConversion } from './asset';
import { isOwnConversionKey } from './object-keys';
import type { RunInTransaction } from './ports';

export type RecordOutcome = 'duplicate' | 'unknown-asset' | 'stale' | 'foreign-object-key' | 'recorded' | 'processed' | 'failed';

/**
 * Applies a conversion report. Idempotent twice over: the message id is claimed in the same transaction as the
 * change, and the status moves only out of NOT_READY, so file-processed is written at most once per asset.
 */
export async function recordConversions(runInTransaction: RunInTransaction, report: ConversionsCompleted): Promise<RecordOutcome> {
  const groupId = Number(report.group_id);
  if (!Number.isSafeInteger(groupId)) return 'unknown-asset';
  // Whatever the bus carries: outputs must lie under this asset's own prefix for this original, or the report
  // could make another asset's (another group's) object downloadable here. Nothing of such a report is kept.
  const foreign = Object.values(report.conversions).some(
    (c) => !isOwnConversionKey(groupId, report.asset_id, report.source_checksum, c.object_key),
  );
  if (foreign) return 'foreign-object-key';
  return runInTransaction(async (tx) => {
    if (!(await tx.messages.claim(report.id))) return 'duplicate';
    const asset = await tx.assets.findForUpdate(groupId, report.asset_id);
    if (!asset) return 'unknown-asset';
    // A report about an original that has since been replaced describes outputs nobody should see.
    if (asset.checksum !== report.source_checksum) return 'stale';

    const entries = Object.entries(report.conversions);
    if (entries.length > 0 || report.image) {
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
      const metadata = { ...asset.metadata };
      if (report.image) {
        metadata.width ??= report.image.width;
        metadata.height ??= report.image.height;
      }
      await tx.assets.saveConversions(groupId, asset.id, conversions, metadata);
    }

    const failedOnly = entries.length === 0 && Object.keys(report.errors).length > 0;
    if (failedOnly) {
      const failed = await tx.assets.markFailed(groupId, asset.id, report.errors);
      if (!failed) return 'recorded';
      await tx.jobs.finishOpen(groupId, asset.id, 'processing', { status: 'ERROR', error: describeErrors(report.errors) });
      await tx.events.write('file-processed', failed);
      return 'failed';
    }
    const processed = await tx.assets.markProcessed(groupId, asset.id);
    if (!processed) return 'recorded';
    await tx.jobs.finishOpen(groupId, asset.id, 'processing', { status: 'COMPLETED' });
    await tx.events.write('file-processed', processed);
    return 'processed';
  });
}

/**
 * A report that could not be applied after every retry: the asset must not stay NOT_READY for ever, so it
 * becomes ERROR (and subscribers hear file-processed with that status) unless it already left NOT_READY.
 */
export async function failUnappliedReport(runInTransaction: RunInTransaction, report: ConversionsCompleted): Promise<boolean> {
  const groupId = Number(report.group_id);
  if (!Number.isSafeInteger(groupId)) return false;
  return runInTransaction(async (tx) => {
    const asset = await tx.assets.findForUpdate(groupId, report.asset_id);
    if (!asset || asset.checksum !== report.source_checksum) return false;
    const errors = { ...report.errors, conversions: 'the conversion report could not be recorded' };
    const failed = await tx.assets.markFailed(groupId, asset.id, errors);
    if (!failed) return false;
    await tx.jobs.finishOpen(groupId, asset.id, 'processing', { status: 'ERROR', error: describeErrors(errors) });
    await tx.events.write('file-processed', failed);
    return true;
  });
}

/** A job's `error`: what failed, per key. */
const describeErrors = (errors: Record<string, string>): string =>
  Object.entries(errors)
    .map(([key, why]) => `${key}: ${why}`)
    .join('; ');
