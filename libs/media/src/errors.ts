/**
 * The original cannot be transcoded however often it is retried (not a video ffprobe reads, no video stream,
 * ffmpeg refuses it): the handler reports the failure at once, with the tool's reason, instead of retrying.
 */
export class UnprocessableVideoError extends Error {
  override readonly name: string = 'UnprocessableVideoError';
  constructor(
    message: string,
    override readonly cause?: unknown,
  ) {
    super(message);
  }
}

/**
 * The file plays but has no picture (audio in a video container): nothing can be transcoded, yet it is not
 * broken. `audio` says what ffprobe found, for the asset's metadata.
 */
export class NoVideoStreamError extends UnprocessableVideoError {
  override readonly name = 'NoVideoStreamError';
  constructor(readonly audio: { duration: number; audio_codec: string; bitrate: number | null } | undefined) {
    super('the file has no video stream');
  }
}
