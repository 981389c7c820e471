/**
 * The original cannot be transcoded however often it is retried (not a video ffprobe reads, no video stream,
 * ffmpeg refuses it): the handler reports the failure at once, with the tool's reason, instead of retrying.
 */
export class UnprocessableVideoError extends Error {
  override readonly name = 'UnprocessableVideoError';
  constructor(
    message: string,
    override readonly cause?: unknown,
  ) {
    super(message);
  }
}
