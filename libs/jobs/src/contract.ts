import type { JobOutputs, JobReport, JobWorker } from '@dam/events';
import { IMAGE_ADDONS, VIDEO_ADDONS } from '@dam/internal-api';

/**
 * The job pipeline's contract, declared once: which worker makes what of an original, the steps of each job kind,
 * the addons, and how a worker's result becomes its final report. metadata (which opens jobs and settles assets) and
 * every worker read it from here, so a step name, an addon or a content type rule is written in one place.
 */

/** The step of a `processing` job that conversion carries out. */
export const CONVERSIONS_STEP = 'conversions';

/** The steps of a video transcode job, in order (spec "Job", CONTRACT §6). */
export const TRANSCODE_STEPS = ['preprocess', 'transcodes', 'addons', 'postprocess'] as const;
export type TranscodeStep = (typeof TRANSCODE_STEPS)[number];

/**
 * The addons: those of an image run on its original, each as a job of the `addon` worker; those of a video are made
 * by its transcode job (the `addons` step). The lists are the asset model's keys (@dam/internal-api, which settings
 * and conversion keys read too), named here for the pipeline.
 */
export { IMAGE_ADDONS, VIDEO_ADDONS };
export type ImageAddon = (typeof IMAGE_ADDONS)[number];
export type VideoAddon = (typeof VIDEO_ADDONS)[number];
/** Every addon key, as Delete and the addon routes accept them. */
export const ADDONS: readonly string[] = [...IMAGE_ADDONS, ...VIDEO_ADDONS];
export const isImageAddon = (name: string): name is ImageAddon => (IMAGE_ADDONS as readonly string[]).includes(name);
/** Addons whose result is also a conversion of the asset, stored under the addon's name. */
export const CONVERSION_ADDONS: ReadonlySet<string> = new Set(['background_removal', 'storyboard']);
export const isAddon = (name: string): boolean => ADDONS.includes(name);

/**
 * Image types conversion can decode (sharp's prebuilt libvips). Other image types (icons, PSD, camera raw, HEIC) are
 * stored and downloadable, with nothing made of them.
 */
const DECODABLE_IMAGES: ReadonlySet<string> = new Set(['image/jpeg', 'image/png', 'image/webp', 'image/gif', 'image/avif', 'image/tiff', 'image/svg+xml']);
export const isDecodableImage = (contentType: string): boolean => DECODABLE_IMAGES.has(contentType.toLowerCase());

/** `; charset=…` and case aside, the type's family. */
const familyOf = (contentType: string): string => contentType.toLowerCase().split(';')[0]?.trim().split('/')[0] ?? '';
export const isVideoType = (contentType: string): boolean => familyOf(contentType) === 'video';

/**
 * What the processing of an original is: the worker that makes its outputs and the job's steps, or nothing (the
 * asset is done as soon as it is stored). Every video is probed (its metadata), even with an empty video profile;
 * an image conversion cannot decode is not sent to it.
 */
export function processingPlanOf(contentType: string): { worker: JobWorker; steps: readonly string[] } | undefined {
  if (isDecodableImage(contentType.split(';')[0]?.trim() ?? '')) return { worker: 'conversion', steps: [CONVERSIONS_STEP] };
  if (isVideoType(contentType)) return { worker: 'transcode', steps: TRANSCODE_STEPS };
  return undefined;
}

/** What a finished job says in its final report, beyond its state. */
export type ReportExtra = Partial<Pick<JobReport, 'outputs' | 'ingested' | 'addon_result' | 'error'>>;

/** How a job ended: its final report; or DEFERRED, the handler gave the command back to be run later (no report). */
export type JobEnd = { state: 'COMPLETED' | 'FAILED'; report?: ReportExtra } | { state: 'DEFERRED' };

/** `key: why; key: why` of a result's errors. */
export const describeErrors = (errors: Record<string, string>): string =>
  Object.entries(errors)
    .map(([key, why]) => `${key}: ${why}`)
    .join('; ');

/**
 * The end of a job that makes outputs (conversion, transcode): FAILED when it made nothing and something failed,
 * else COMPLETED (the keys that failed are listed in the report all the same).
 */
export function endOfOutputs(outputs: JobOutputs): { state: 'COMPLETED' | 'FAILED'; report: ReportExtra } {
  const failed = Object.keys(outputs.conversions).length === 0 && Object.keys(outputs.errors).length > 0;
  return failed ? { state: 'FAILED', report: { outputs, error: describeErrors(outputs.errors) } } : { state: 'COMPLETED', report: { outputs } };
}

/** A result that says the original itself failed (`errors.original`), so the asset turns ERROR with the reason. */
export const originalFailed = (result: Pick<JobOutputs, 'source_checksum'>, why: string): JobOutputs => ({
  ...result,
  image: null,
  conversions: {},
  errors: { original: why },
});
