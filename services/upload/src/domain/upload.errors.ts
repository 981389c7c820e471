import { AppError, badRequest, payloadTooLarge } from '@dam/errors';

export const noFile = (): AppError => badRequest('NO_FILE', 'The request has no file part');
export const notMultipart = (): AppError => badRequest('NOT_MULTIPART', 'The body must be multipart/form-data');
export const invalidCustomMetadata = (why: string): AppError =>
  badRequest('INVALID_CUSTOM_METADATA', `custom_metadata must be a JSON string: ${why}`, [{ path: 'custom_metadata', message: why }]);
export const uploadTooLarge = (max: number): AppError => payloadTooLarge(`The upload is larger than ${max} bytes`, 'UPLOAD_TOO_LARGE');
export const malformedUpload = (why: string): AppError => badRequest('MALFORMED_UPLOAD', `The multipart body is malformed: ${why}`);
