import type { JetStreamClient } from '@nats-io/jetstream';
import {
  ASSET_EVENTS,
  assetEventFilter,
  consume,
  CONVERSIONS_COMPLETED,
  FILE_SAVED,
  publishEvent,
  type Consumer,
  type ConversionsCompleted,
  type FileSavedEvent,
  type MessageContext,
} from '@dam/events';
import type { Logger } from '@dam/logging';
import { UnprocessableImageError } from '../domain/conversion.errors';
import { countReport, startConversionTimer } from './conversion.metrics';
import { convertAsset, emptyReport, failureReport, type ConvertAssetDeps, type ConvertAssetInput } from '../use-cases/convert-asset.use-case';
import type { Worker } from '@dam/http';

export const FILE_SAVED_DURABLE = 'conversion-file-saved';
const FILE_SAVED_FILTER = assetEventFilter('*', 'file-saved');

/**
 * Key under which a whole-original failure is reported (corrupt file, retries exhausted): the failure is not
 * about one conversion, and `original` is the key the contract uses for a failed original.
 */
export const ORIGINAL_ERROR_KEY = 'original';

export interface FileSavedConsumerDeps extends ConvertAssetDeps {
  js: JetStreamClient;
  logger: Logger;
}

const isImage = (contentType: string): boolean => contentType.toLowerCase().startsWith('image/');

/**
 * Image types sharp's prebuilt libvips decodes. Metadata waits for a report on every `image/*` asset, so other
 * image types (icons, PSD, camera raw, HEIC) get an empty report: stored and downloadable, no conversions.
 */
const DECODABLE = new Set(['image/jpeg', 'image/png', 'image/webp', 'image/gif', 'image/avif', 'image/tiff', 'image/svg+xml']);
export const isDecodableImage = (contentType: string): boolean => DECODABLE.has(contentType.toLowerCase());

const inputOf = (event: FileSavedEvent): ConvertAssetInput => ({
  groupId: event.group_id,
  assetId: event.asset_id,
  checksum: event.data.checksum,
});

async function publishReport(js: JetStreamClient, report: ConversionsCompleted): Promise<void> {
  await publishEvent(js, CONVERSIONS_COMPLETED.subject, CONVERSIONS_COMPLETED.schema, report, { msgId: report.id });
}

export function handleFileSaved(deps: FileSavedConsumerDeps) {
  return async (event: FileSavedEvent, ctx: MessageContext): Promise<void> => {
    // Metadata marks non-images OK by itself; nothing to make here.
    if (!isImage(event.data.content_type)) return;
    const input = inputOf(event);
    const log = { asset_id: input.assetId, group_id: input.groupId, delivery: ctx.deliveryCount };
    if (!isDecodableImage(event.data.content_type)) {
      deps.logger.info({ ...log, content_type: event.data.content_type }, 'image type not convertible: nothing to make');
      await publishReport(deps.js, emptyReport(input));
      return;
    }
    deps.logger.info(log, 'conversion started');
    const started = Date.now();
    const timed = startConversionTimer();
    const stopKeepAlive = ctx.keepAlive();
    let report: ConversionsCompleted;
    try {
      report = await convertAsset(input, deps, ctx.working);
    } catch (error) {
      if (!(error instanceof UnprocessableImageError)) {
        timed('failed');
        throw error;
      }
      // Retrying cannot fix the file: report now so the asset turns ERROR without waiting for every retry.
      deps.logger.warn({ ...log, err: { message: error.message } }, 'original is not a usable image');
      report = failureReport(input, ORIGINAL_ERROR_KEY, error.message);
    } finally {
      stopKeepAlive();
    }
    try {
      await publishReport(deps.js, report);
    } catch (error) {
      timed('failed');
      throw error;
    }
    timed(Object.keys(report.errors).length > 0 ? 'error' : 'ok');
    countReport(report);
    deps.logger.info(
      { ...log, conversions: Object.keys(report.conversions), errors: report.errors, ms: Date.now() - started },
      'conversion finished',
    );
  };
}

/** After the last delivery failed: tell metadata, so the asset ends in ERROR instead of NOT_READY forever. */
export function deadLetterFileSaved(deps: FileSavedConsumerDeps) {
  return async (event: FileSavedEvent, error: unknown): Promise<void> => {
    if (!isImage(event.data.content_type)) return;
    const message = `conversion failed after every retry: ${error instanceof Error ? error.message : String(error)}`;
    const report = failureReport(inputOf(event), ORIGINAL_ERROR_KEY, message);
    await publishReport(deps.js, report);
    countReport(report);
    deps.logger.error({ asset_id: event.asset_id, group_id: event.group_id }, 'conversion given up: error reported');
  };
}

export interface FileSavedConsumerOptions {
  concurrency: number;
  ackWaitMs: number;
  maxDeliver: number;
  backoffMs?: number[];
}

export function startFileSavedConsumer(
  nc: Parameters<typeof consume>[0]['nc'],
  deps: FileSavedConsumerDeps,
  options: FileSavedConsumerOptions,
): Promise<Consumer> {
  return consume({
    nc,
    stream: ASSET_EVENTS,
    durable: FILE_SAVED_DURABLE,
    filterSubjects: FILE_SAVED_FILTER,
    schema: FILE_SAVED.schema,
    handler: handleFileSaved(deps),
    onDeadLetter: deadLetterFileSaved(deps),
    logger: deps.logger,
    concurrency: options.concurrency,
    ackWaitMs: options.ackWaitMs,
    maxDeliver: options.maxDeliver,
    ...(options.backoffMs ? { backoffMs: options.backoffMs } : {}),
  });
}

/** The consumer as conversion declares it to the shared start-up. */
export function fileSavedWorker(nc: Parameters<typeof consume>[0]['nc'], deps: FileSavedConsumerDeps, options: FileSavedConsumerOptions): Worker {
  return {
    kind: 'consumer',
    durable: FILE_SAVED_DURABLE,
    stream: ASSET_EVENTS,
    subjects: [FILE_SAVED_FILTER],
    start: () => startFileSavedConsumer(nc, deps, options),
  };
}
