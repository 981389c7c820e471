import type { JetStreamClient } from '@nats-io/jetstream';
import { publishEvent, usageOf, type JobCommand } from '@dam/events';
import type { Worker } from '@dam/http';
import { jobWorker, type JobHandler, type JobRuntime } from '@dam/jobs';
import { analyseAsset, type AnalyseDeps } from '../use-cases/analyse-asset.use-case';

export const ADDON_JOBS_DURABLE = 'addon-jobs';

export interface AddonDeps extends AnalyseDeps {
  /** Where usage records go (addon_runs). */
  js: JetStreamClient;
}

/**
 * The addon worker: runs one addon on one asset's original and reports what it found (metadata keeps it with the
 * asset). An image the addon cannot read, or a model that could not load, ends the job FAILED with the reason;
 * anything else (storage) throws and is retried.
 */
export function addonJobs(deps: AddonDeps): JobHandler {
  return {
    worker: 'addon',
    durable: ADDON_JOBS_DURABLE,
    firstStep: (command) => command.keys?.[0] || 'addon',
    noun: 'the addon',
    async run({ command }) {
      const addon = command.keys?.[0] ?? '';
      const started = Date.now();
      const outcome = await analyseAsset(deps, {
        addon,
        groupId: command.group_id,
        assetId: command.asset_id,
        checksum: command.source_checksum,
        sourceKey: command.source_key ?? '',
      });
      if (!outcome.found) return { state: 'FAILED', report: { error: outcome.reason } };
      const { result, conversion } = outcome;
      const made = conversion && { source_checksum: command.source_checksum, image: null, conversions: { [addon]: conversion }, errors: {} };
      deps.logger.info(
        { job_id: command.job_id, asset_id: command.asset_id, addon, ms: Date.now() - started, steps_ms: { ...outcome.ms, ...outcome.steps } },
        'addon finished',
      );
      return { state: 'COMPLETED', report: { addon_result: { addon, result }, ...(made ? { outputs: made } : {}) } };
    },
    after: ({ command }, end, startedAt) => (end.state === 'COMPLETED' ? countRun(deps, command, startedAt) : undefined),
  };
}

/** Usage statistics (CONTRACT §9): one `addon_runs` per job that completed, counted against who asked. */
async function countRun(deps: AddonDeps, command: JobCommand, started: Date): Promise<void> {
  if (!command.created_by) return;
  const usage = usageOf('addon_runs');
  const record = {
    id: `addon_runs-job-${command.job_id}`,
    metric: 'addon_runs' as const,
    group_id: command.group_id,
    user_id: command.created_by,
    value: 1,
    start: started.toISOString(),
    end: new Date().toISOString(),
  };
  await publishEvent(deps.js, usage.subject, usage.schema, record, { msgId: record.id });
}

export const addonJobWorker = (deps: AddonDeps, runtime: JobRuntime): Worker => jobWorker(addonJobs(deps), runtime);
