/**
 * The original cannot be turned into images however often it is retried (not decodable, or over the pixel
 * limit): the handler reports the failure at once instead of nak'ing.
 */
export class UnprocessableImageError extends Error {
  override readonly name = 'UnprocessableImageError';
  constructor(
    message: string,
    override readonly cause?: unknown,
  ) {
    super(message);
  }
}

/**
 * Every on-demand transform slot of this process is taken and the queue for one is full, or the wait for one ran
 * out: the request is refused, so a burst of transforms cannot pile up unbounded work (memory, temporary files,
 * CPU) behind the running ones.
 */
export class TransformsBusyError extends Error {
  override readonly name = 'TransformsBusyError';
  constructor(
    readonly limit: number,
    readonly retryAfterSeconds: number,
  ) {
    super(`${limit} on-demand transforms are being made already`);
  }
}
