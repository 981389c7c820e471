import type { z } from 'zod';
import { unavailable } from '@dam/errors';
import { currentTraceHeaders } from '@dam/telemetry';

/** What signs a call: a service signer of @dam/auth-tokens fits (kept structural so auth-tokens may use us). */
interface AnySigner {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the principal type lives in auth-tokens
  headers(target: { audience: string; method: string; path: string; principal?: any; body?: string }): Record<string, string>;
}

export interface InternalClientOptions {
  /** The called service's base URL (`AUTH_URL`, `METADATA_URL`...). */
  baseUrl: string;
  /** The called service's name: the audience of the service token, and the name in errors. */
  audience: string;
  signer: AnySigner;
  /** Default 5 s per call. */
  timeoutMs?: number;
}

export interface CallOptions<S extends z.ZodType> {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  /** The answer's schema: a 2xx body that does not match is the called service's fault (UNAVAILABLE). */
  response: S;
  body?: unknown;
  /** The user the call acts for (it rides in the service token). */
  principal?: unknown;
  requestId?: string;
  timeoutMs?: number;
}

/** The error body of a non-2xx answer, as the contract writes it (undefined when it is not one). */
export interface CallError {
  code?: string;
  message?: string;
  details?: unknown;
}

/** `retryAfter`: the answer's Retry-After (a 503 or 429), for the caller to pass on to its own client. */
export type CallResult<T> = { ok: true; status: number; body: T } | { ok: false; status: number; error: CallError | undefined; retryAfter?: string };

/**
 * One way to call another service of the suite: the caller's service token for this very request (audience,
 * method, path, and the principal when acting for a user), the trace and request id passed on, a timeout,
 * and the answer validated. A network failure, a timeout or an invalid 2xx answer throws UNAVAILABLE
 * (`<SERVICE>_UNAVAILABLE`); any other status comes back as `{ok: false, status, error}` for the caller to map.
 */
export function internalClient(opts: InternalClientOptions) {
  const base = opts.baseUrl.replace(/\/$/, '');
  const code = `${opts.audience.toUpperCase().replace(/-/g, '_')}_UNAVAILABLE`;
  const down = (why: string) => unavailable(`The ${opts.audience} service is unavailable (${why})`, code);

  return {
    async call<S extends z.ZodType>(o: CallOptions<S>): Promise<CallResult<z.infer<S>>> {
      let res: Response;
      // The exact text sent is the text the token is bound to (its `bh`).
      const body = o.body === undefined ? undefined : JSON.stringify(o.body);
      try {
        res = await fetch(`${base}${o.path}`, {
          method: o.method,
          headers: {
            accept: 'application/json',
            ...(body === undefined ? {} : { 'content-type': 'application/json' }),
            // fetch (undici) is not auto-instrumented: the trace goes on by hand.
            ...currentTraceHeaders(),
            ...(o.requestId ? { 'x-request-id': o.requestId } : {}),
            ...opts.signer.headers({
              audience: opts.audience,
              method: o.method,
              path: o.path,
              ...(o.principal ? { principal: o.principal } : {}),
              ...(body === undefined ? {} : { body }),
            }),
          },
          ...(body === undefined ? {} : { body }),
          signal: AbortSignal.timeout(o.timeoutMs ?? opts.timeoutMs ?? 5000),
        });
      } catch (error) {
        throw down(error instanceof Error && error.name === 'TimeoutError' ? 'timeout' : 'unreachable');
      }
      const text = await res.text().catch(() => '');
      let json: unknown;
      try {
        json = text === '' ? undefined : JSON.parse(text);
      } catch {
        json = undefined;
      }
      if (res.status >= 200 && res.status < 300) {
        const parsed = o.response.safeParse(json);
        if (!parsed.success) throw down(`an invalid answer to ${o.method} ${o.path}`);
        return { ok: true, status: res.status, body: parsed.data as z.infer<S> };
      }
      const error = (json as { error?: CallError } | undefined)?.error;
      const retryAfter = res.headers.get('retry-after') ?? undefined;
      return { ok: false, status: res.status, error: error && typeof error === 'object' ? error : undefined, ...(retryAfter ? { retryAfter } : {}) };
    },
  };
}

export type InternalClient = ReturnType<typeof internalClient>;
