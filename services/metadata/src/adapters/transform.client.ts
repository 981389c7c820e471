import { AppError, unavailable } from '@dam/errors';
import { internalClient, INTERNAL_PATHS, transformResponse, type InternalClientOptions } from '@dam/internal-api';
import type { TransformCall } from '../domain/ports';

/** conversion `POST /internal/v1/transforms`: its 400 (not an image, too large) and 503 with Retry-After (busy) reach the client as they are. */
export function transformClient(opts: { baseUrl: string; signer: InternalClientOptions['signer']; timeoutMs?: number }): TransformCall {
  const conversion = internalClient({ baseUrl: opts.baseUrl, audience: 'conversion', signer: opts.signer, timeoutMs: opts.timeoutMs ?? 60_000 });
  return async (body) => {
    const res = await conversion.call({ method: 'POST', path: INTERNAL_PATHS.transforms, body, response: transformResponse });
    if (res.ok) return res.body;
    if (res.status === 400 && res.error?.code)
      throw new AppError('BAD_REQUEST', res.error.code, res.error.message ?? 'The transform failed', res.error.details);
    // Every transform slot is taken (TRANSFORMS_BUSY): the client gets the same 503, code and Retry-After.
    if (res.status === 503 && res.error?.code && res.retryAfter) {
      throw new AppError('UNAVAILABLE', res.error.code, res.error.message ?? 'The conversion service is busy', undefined, { 'Retry-After': res.retryAfter });
    }
    throw unavailable(`The conversion service answered ${res.status}`, 'CONVERSION_UNAVAILABLE');
  };
}
