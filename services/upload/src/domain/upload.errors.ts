import { AppError, badRequest, payloadTooLarge, rateLimited, requestTimeout } from '@dam/errors';

export const noFile = (): AppError => badRequest('NO_FILE', 'The request has no file part');
export const notMultipart = (): AppError => badRequest('NOT_MULTIPART', 'The body must be multipart/form-data');
export const invalidCustomMetadata = (why: string): AppError =>
  badRequest('INVALID_CUSTOM_METADATA', `custom_metadata must be a JSON string: ${why}`, [{ path: 'custom_metadata', message: why }]);
export const uploadTooLarge = (max: number): AppError => payloadTooLarge(`The upload is larger than ${max} bytes`, 'UPLOAD_TOO_LARGE');
export const malformedUpload = (why: string): AppError => badRequest('MALFORMED_UPLOAD', `The multipart body is malformed: ${why}`);
export const uploadIdle = (ms: number): AppError =>
  requestTimeout(`No part of the upload arrived for ${Math.round(ms / 1000)} s: the upload was abandoned`, 'UPLOAD_IDLE_TIMEOUT');
export const tooManyUploads = (max: number): AppError =>
  rateLimited(1, `At most ${max} uploads at once per user or API key: retry when one has finished`);
