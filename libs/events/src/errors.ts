import type { z } from 'zod';

/** A payload that does not match its schema: a programming error on the publishing side, never retried. */
export class InvalidEventPayloadError extends Error {
  override readonly name = 'InvalidEventPayloadError';
  constructor(
    readonly subject: string,
    readonly issues: ReadonlyArray<{ path: string; message: string }>,
  ) {
    super(`invalid payload for ${subject}: ${issues.map((i) => `${i.path || '(root)'}: ${i.message}`).join('; ')}`);
  }
}

export function issuesOf(error: z.ZodError): Array<{ path: string; message: string }> {
  return error.issues.map((issue) => ({ path: issue.path.map(String).join('.'), message: issue.message }));
}

/** Validates or throws {@link InvalidEventPayloadError}; returns the parsed value (unknown keys stripped). */
export function parsePayload<S extends z.ZodType>(subject: string, schema: S, payload: unknown): z.output<S> {
  const result = schema.safeParse(payload);
  if (!result.success) throw new InvalidEventPayloadError(subject, issuesOf(result.error));
  return result.data;
}
