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
