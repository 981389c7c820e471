import { AppError, badRequest, payloadTooLarge, rateLimited } from '@dam/errors';
export { malformedUpload, notMultipart, uploadIdle } from '@dam/http';

export const noFile = (): AppError => badRequest('NO_FILE', 'The request has no file part');
export const invalidCustomMetadata = (why: string): AppError =>
  badRequest('INVALID_CUSTOM_METADATA', `custom_metadata must be a JSON string: ${why}`, [{ path: 'custom_metadata', message: why }]);
export const uploadTooLarge = (max: number): AppError => payloadTooLarge(`The upload is larger than ${max} bytes`, 'UPLOAD_TOO_LARGE');

/** One request's bytes, across its files: past `max` the upload fails with 413. */
export function requestBudget(max: number): { take(bytes: number): void } {
  let total = 0;
  return {
    take(bytes) {
      total += bytes;
      if (total > max) throw uploadTooLarge(max);
    },
  };
}
export const tooManyUploads = (max: number): AppError => rateLimited(1, `At most ${max} uploads at once per user or API key: retry when one has finished`);

/**
 * A registration (create or replace) that got no answer: a timeout, or the connection lost after the request went
 * out (metadata killed after its commit). metadata may have done it, so the objects it names must not be removed
 * on the spot; the client sees the same 503 as for any unavailable metadata.
 */
export class RegistrationUnknown extends AppError {}
