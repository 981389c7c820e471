import type { JetStreamClient } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import sharp from 'sharp';
import { jobCommandWorker, publishEvent, startJobReporter, usageOf, workerId, type JobCommand, type JobConsumerOptions } from '@dam/events';
import type { Worker } from '@dam/http';
import type { Logger } from '@dam/logging';
import type { Storage } from '@dam/storage';
import { ocrResultOf } from '../domain/ocr';

export const ADDON_JOBS_DURABLE = 'addon-jobs';
const WORKER_ID = workerId('addon');

export interface AddonDeps {
  js: JetStreamClient;
  storage: Storage;
  logger: Logger;
  heartbeatMs: number;
  maxInputPixels: number;
  /** OCR of an image (PNG bytes) to tesseract's TSV. */
  ocr: (png: Buffer) => Promise<string>;
}

/** Reads the original whole (images only; their size is bounded by the upload limit and the pixel limit). */
async function originalOf(storage: Storage, key: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of await storage.getStream(key)) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/**
 * Runs one addon on one asset's original and reports what it found (metadata keeps it with the asset): an image the
 * addon cannot read ends the job FAILED with the reason; anything else (storage) throws and is retried.
 */
export function handleAddonJob(deps: AddonDeps) {
  return async (command: JobCommand): Promise<void> => {
    const addon = command.keys?.[0] ?? '';
    const reporter = startJobReporter({ js: deps.js, command, worker: WORKER_ID, step: addon || 'addon', heartbeatMs: deps.heartbeatMs, logger: deps.logger });
    const started = Date.now();
    try {
      if (addon !== 'text_extraction') {
        await reporter.finish('FAILED', { error: `the ${addon} addon is not available in this version` });
        return;
      }
      const bytes = await originalOf(deps.storage, command.source_key ?? '');
      let page: Buffer;
      try {
        // Upright (EXIF orientation), first frame, grey: what tesseract reads best.
        page = await sharp(bytes, { limitInputPixels: deps.maxInputPixels }).rotate().greyscale().png().toBuffer();
      } catch (error) {
        await reporter.finish('FAILED', { error: `the image cannot be read: ${(error as Error).message}` });
        return;
      }
      let result;
      try {
        result = ocrResultOf(await deps.ocr(page));
      } catch (error) {
        await reporter.finish('FAILED', { error: (error as Error).message });
        return;
      }
      await reporter.finish('COMPLETED', { addon_result: { addon, result: { ...result } } });
      await countRun(deps, command, new Date(started)).catch((error: unknown) => deps.logger.warn({ err: error, job_id: command.job_id }, 'addon usage not published'));
      deps.logger.info({ job_id: command.job_id, asset_id: command.asset_id, addon, words: result.words.length, ms: Date.now() - started }, 'addon finished');
    } finally {
      reporter.stop();
    }
  };
}

/** Usage statistics (CONTRACT §9): one `addon_runs` per job that completed, counted against who asked. */
async function countRun(deps: AddonDeps, command: JobCommand, started: Date): Promise<void> {
  if (!command.created_by) return;
  const usage = usageOf('addon_runs');
  const record = { id: `addon_runs-job-${command.job_id}`, metric: 'addon_runs' as const, group_id: command.group_id, user_id: command.created_by, value: 1, start: started.toISOString(), end: new Date().toISOString() };
  await publishEvent(deps.js, usage.subject, usage.schema, record, { msgId: record.id });
}

export function addonJobWorker(nc: NatsConnection, deps: AddonDeps, options: JobConsumerOptions): Worker {
  return jobCommandWorker({
    nc,
    worker: 'addon',
    durable: ADDON_JOBS_DURABLE,
    handler: handleAddonJob(deps),
    onDeadLetter: async (command, error) => {
      const reporter = startJobReporter({ js: deps.js, command, worker: WORKER_ID, step: command.keys?.[0] ?? 'addon', heartbeatMs: deps.heartbeatMs, logger: deps.logger });
      await reporter.finish('FAILED', { error: `the addon failed after every retry: ${error instanceof Error ? error.message : String(error)}` });
    },
    logger: deps.logger,
    ...options,
  });
}
