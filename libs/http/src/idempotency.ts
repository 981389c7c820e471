import { createHash } from 'node:crypto';
import busboy from 'busboy';
import type { Request, Response } from 'express';
import { AppError, badRequest, conflict, isAppError, payloadTooLarge, unprocessable } from '@dam/errors';
import type { Logger } from '@dam/logging';
import { watchIdle } from './multipart/receiver';
import { startPoller } from './poller';
import type { Worker } from './run-service';

/**
 * CONTRACT §13 Idempotency-Key on the state-changing POSTs of `{base}` and `{upload}`: the first response is kept
 * (24 h, per group, user and key) and answered again to a repeat of the same request; a repeat while the first
 * runs answers 409 `IDEMPOTENCY_IN_FLIGHT`; the key with another request 422 `IDEMPOTENCY_KEY_REUSED`.
 */

/** What is kept of a first response. */
export interface KeptResponse {
  fingerprint: string;
  status: number;
  contentType: string;
  /** The body, base64. */
  body: string;
  /** Headers that are part of the answer (`keptHeaders`), e.g. a created resource's Location. */
  headers?: Record<string, string>;
  /** Fields of the answer not kept because they carry a credential (see CREDENTIAL_FIELDS); a replay names them. */
  withheld?: string[];
}

export type Claim = { kind: 'claimed'; token: number } | { kind: 'running' } | { kind: 'done'; response: KeptResponse };

/** Where the responses are kept, shared by every replica (libs/db: a PostgreSQL table; tests: in memory). */
export interface IdempotencyStore {
  /** Takes the key for a new request, or tells what holds it: a request still running, or a kept response. */
  claim(key: string): Promise<Claim>;
  /** The first response, kept for the key this request claimed. */
  keep(key: string, token: number, response: KeptResponse): Promise<void>;
  /** The request failed (5xx, cut off): the key is free again, a retry runs anew. */
  release(key: string, token: number): Promise<void>;
}

/**
 * The worker of a service whose store keeps answers outside the process (the gateway's and upload's databases):
 * expired answers removed every `intervalMs` (a claim already ignores them, so this only bounds the table).
 */
export function idempotencySweeper(store: { sweep(): Promise<number> }, intervalMs: number, logger: Logger): Worker {
  const name = 'idempotency-sweep';
  return { kind: 'poller', name, start: () => startPoller({ name, intervalMs, logger, run: () => store.sweep(), runAtStart: false }) };
}

/**
 * Answers that are the request's own outcome are kept; those about the moment (a server error, too many requests,
 * credentials, a timeout, a conflict) are not: a retry under the same key runs again.
 */
const final = (status: number): boolean => status < 500 && ![401, 408, 409, 429].includes(status);

/**
 * Top-level fields of a JSON answer that carry a credential: an API key's `key` (POST /api_keys), a user's
 * `uploadkey` (POST /users/me/uploadkey), and their kind. An answer that must not be stored anywhere
 * (`Cache-Control: no-store`, which such routes send) is kept without them: a repeat gets the rest with
 * `Idempotent-Withheld` naming what was left out (a key is shown once; a client that lost it revokes it by its id
 * and makes another). A no-store answer that is not a JSON object is not kept at all: a repeat runs again.
 */
const CREDENTIAL_FIELDS: readonly string[] = ['key', 'uploadkey', 'token', 'access_token', 'refresh_token', 'secret', 'password'];
export const WITHHELD_HEADER = 'Idempotent-Withheld';

/** The answer as it may be kept: without its credentials when it says it must not be stored; undefined: not at all. */
function keepable(sent: { body: Buffer; noStore: boolean }): { body: Buffer; withheld: string[] } | undefined {
  if (!sent.noStore) return { body: sent.body, withheld: [] };
  let value: unknown;
  try {
    value = JSON.parse(sent.body.toString('utf8')) as unknown;
  } catch {
    return undefined;
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
  const rest: Record<string, unknown> = {};
  const withheld: string[] = [];
  for (const [name, field] of Object.entries(value)) {
    if (CREDENTIAL_FIELDS.includes(name)) withheld.push(name);
    else rest[name] = field;
  }
  return { body: Buffer.from(JSON.stringify(rest)), withheld };
}

/** Retry-After of 503 IDEMPOTENCY_UNAVAILABLE, as of any 503 for a dependency that is down (mapError). */
const IDEMPOTENCY_RETRY_AFTER_S = 5;
/** Responses larger than this are not kept (the key is released: a repeat runs again). */
const MAX_KEPT_BYTES = 256 * 1024;
const KEY = /^[\x20-\x7e]{1,255}$/;
export const IDEMPOTENCY_HEADER = 'idempotency-key';

const hash = (...parts: string[]): string => {
  const h = createHash('sha256');
  for (const p of parts) h.update(p).update('\0');
  return h.digest('hex');
};

/**
 * How a body read only to be fingerprinted is bounded (a repeat: nobody else reads it, so nothing else bounds it):
 * no byte for `idleTimeoutMs` fails it with 408, more than `maxBytes` with 413 (`tooLarge`, by default
 * PAYLOAD_TOO_LARGE). Absent or 0: no bound.
 */
export interface BodyBounds {
  idleTimeoutMs?: number;
  maxBytes?: number;
  tooLarge?: (maxBytes: number) => AppError;
}

const tooLargeOf = (bounds: BodyBounds) =>
  (bounds.tooLarge ?? ((max: number) => payloadTooLarge(`The request body is larger than ${max} bytes`)))(bounds.maxBytes ?? 0);

/** Fails `reject` when the body stalls or passes its size; returns the function that stops watching. */
function bound(req: Request, bounds: BodyBounds, reject: (error: AppError) => void): () => void {
  const stopIdle = watchIdle(req, bounds.idleTimeoutMs ?? 0, reject);
  const max = bounds.maxBytes ?? 0;
  if (max <= 0) return stopIdle;
  let size = 0;
  const count = (c: Buffer) => {
    size += c.length;
    if (size > max) {
      stop();
      reject(tooLargeOf(bounds));
    }
  };
  const stop = () => {
    stopIdle();
    req.off('data', count);
  };
  req.on('data', count);
  return stop;
}

/**
 * The request's fingerprint (CONTRACT §13): method, path and body; for multipart bodies the field names, file names,
 * sizes and `custom_metadata`. A body a parser already read (JSON) is taken as parsed; any other body is read
 * alongside whoever else reads it (the proxy, the upload), so it must be called before they start. `bounds` limit
 * a body read for the fingerprint alone.
 */
export function fingerprintOf(req: Request, bounds: BodyBounds = {}): Promise<string> {
  const head = [req.method, req.originalUrl.split('?')[0] ?? ''];
  if (req.readableEnded) return Promise.resolve(hash(...head, JSON.stringify(req.body ?? null)));
  const declared = Number(req.headers['content-length']);
  if (bounds.maxBytes && Number.isFinite(declared) && declared > bounds.maxBytes) return Promise.reject(tooLargeOf(bounds));
  if (/^multipart\/form-data/i.test(req.headers['content-type'] ?? '')) return multipartFingerprint(req, head, bounds);
  return new Promise((resolve, reject) => {
    const stop = bound(req, bounds, reject);
    req.once('end', stop);
    const h = createHash('sha256');
    for (const p of head) h.update(p).update('\0');
    req.on('data', (c: Buffer) => h.update(c));
    req.once('end', () => resolve(h.digest('hex')));
    req.once('error', reject);
    req.once('close', () => {
      if (!req.complete) reject(new Error('the request body was not received whole'));
    });
  });
}

function multipartFingerprint(req: Request, head: string[], bounds: BodyBounds): Promise<string> {
  return new Promise((resolve, reject) => {
    const parts: string[] = [];
    let parser: busboy.Busboy;
    try {
      parser = busboy({ headers: req.headers, limits: { fieldSize: 1024 * 1024 } });
    } catch (error) {
      reject(error);
      return;
    }
    const stop = bound(req, bounds, (error) => {
      req.unpipe(parser);
      reject(error);
    });
    parser.once('close', stop);
    parser.on('file', (field, stream, info) => {
      let size = 0;
      stream.on('data', (c: Buffer) => (size += c.length));
      stream.once('end', () => parts.push(`file:${field}:${info.filename ?? ''}:${size}`));
    });
    parser.on('field', (field, value) => parts.push(field === 'custom_metadata' ? `field:${field}:${value}` : `field:${field}`));
    parser.once('close', () => resolve(hash(...head, ...parts)));
    parser.once('error', reject);
    req.once('error', reject);
    // A body cut off (the client left, or the answer came first and closed the connection) has no fingerprint.
    req.once('close', () => {
      if (!req.complete) reject(new Error('the request body was not received whole'));
    });
    req.pipe(parser);
  });
}

/**
 * Keeps the response's status and body as they are sent (nothing past MAX_KEPT_BYTES). `beforeEnd` runs when the
 * handler ends the response, before its end is sent: the answer is stored first, so a repeat the client sends once it
 * has the answer finds it (with a store across the network, a repeat could otherwise arrive before the write and get
 * 409 IDEMPOTENCY_IN_FLIGHT).
 */
function capture(res: Response, beforeEnd: () => Promise<void>): () => { status: number; contentType: string; body: Buffer; noStore: boolean } | undefined {
  const chunks: Buffer[] = [];
  let size = 0;
  let overflow = false;
  // Headers given to writeHead directly (a proxy relaying an upstream's answer) are not readable with getHeader.
  let cacheControl: unknown;
  const writeHead = res.writeHead.bind(res) as (...args: unknown[]) => Response;
  res.writeHead = ((...args: unknown[]) => {
    for (const arg of args.slice(1)) {
      if (arg && typeof arg === 'object' && !Array.isArray(arg)) {
        for (const [name, value] of Object.entries(arg)) if (name.toLowerCase() === 'cache-control') cacheControl = value;
      }
    }
    return writeHead(...args);
  }) as Response['writeHead'];
  const take = (chunk: unknown, encoding?: unknown) => {
    if (chunk === undefined || chunk === null || typeof chunk === 'function' || overflow) return;
    const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8');
    size += buf.length;
    if (size > MAX_KEPT_BYTES) overflow = true;
    else chunks.push(buf);
  };
  const write = res.write.bind(res) as (...args: unknown[]) => boolean;
  const end = res.end.bind(res) as (...args: unknown[]) => Response;
  res.write = ((chunk: unknown, ...rest: unknown[]) => {
    take(chunk, rest[0]);
    return write(chunk, ...rest);
  }) as Response['write'];
  res.end = ((chunk?: unknown, ...rest: unknown[]) => {
    take(chunk, rest[0]);
    void beforeEnd()
      .catch(() => undefined)
      .then(() => end(chunk, ...rest));
    return res;
  }) as Response['end'];
  const noStore = () => /\bno-store\b/i.test(String(cacheControl ?? res.getHeader('cache-control') ?? ''));
  return () =>
    overflow
      ? undefined
      : { status: res.statusCode, contentType: String(res.getHeader('content-type') ?? ''), body: Buffer.concat(chunks), noStore: noStore() };
}

export interface IdempotencyHooks {
  /** The request is answered before its body was read whole (409, 408, 413): e.g. close the connection after it. */
  answeredEarly?(req: Request, res: Response): void;
  /** Response headers kept and replayed with the body (lower case): answers whose meaning is in headers (tus). */
  keptHeaders?: readonly string[];
  /**
   * A repeat's body is read only to be compared with the first request's: these bounds (the route's own idle
   * timeout and size limit) apply to that read. The first request's body is bounded by its handler.
   */
  repeatBody?: BodyBounds;
}

/**
 * Runs `handle` under the request's Idempotency-Key, if it has one, for `scope` (the group and user). Resolves once
 * the request is answered here (a replay, 409, 422: nothing more to do) or `handle` was started; throws the
 * contract's errors.
 */
export async function idempotent(
  store: IdempotencyStore,
  scope: string,
  req: Request,
  res: Response,
  handle: () => unknown,
  hooks: IdempotencyHooks = {},
): Promise<void> {
  const header = req.header(IDEMPOTENCY_HEADER);
  if (header === undefined) {
    await handle();
    return;
  }
  if (!KEY.test(header)) throw badRequest('INVALID_IDEMPOTENCY_KEY', 'Idempotency-Key must be 1-255 printable characters');
  const key = hash(scope, header);
  // The store unreachable (its database down): nothing ran, retry later.
  const claim = await store.claim(key).catch((error: unknown) => {
    throw new AppError(
      'UNAVAILABLE',
      'IDEMPOTENCY_UNAVAILABLE',
      `Idempotency keys cannot be checked now (${error instanceof Error ? error.message : String(error)}): try again`,
      undefined,
      {
        'Retry-After': String(IDEMPOTENCY_RETRY_AFTER_S),
      },
    );
  });
  if (claim.kind === 'running') {
    hooks.answeredEarly?.(req, res);
    throw conflict('IDEMPOTENCY_IN_FLIGHT', 'A request with this Idempotency-Key is still running: try again when it has finished');
  }
  if (claim.kind === 'done') {
    // Read alone (a repeat: the body is read to be compared, not used), within the route's bounds.
    const print = await fingerprintOf(req, hooks.repeatBody).catch((error: unknown) => {
      if (!req.complete) hooks.answeredEarly?.(req, res);
      if (isAppError(error)) throw error;
      throw badRequest('MALFORMED_BODY', `The request body cannot be read: ${error instanceof Error ? error.message : String(error)}`);
    });
    if (print !== claim.response.fingerprint) {
      throw unprocessable('IDEMPOTENCY_KEY_REUSED', 'This Idempotency-Key was used for a different request');
    }
    res.status(claim.response.status).setHeader('Idempotent-Replayed', 'true');
    if (claim.response.withheld?.length) res.setHeader(WITHHELD_HEADER, claim.response.withheld.join(', '));
    if (claim.response.contentType) res.setHeader('Content-Type', claim.response.contentType);
    for (const [name, value] of Object.entries(claim.response.headers ?? {})) res.setHeader(name, value);
    res.end(Buffer.from(claim.response.body, 'base64'));
    return;
  }
  // Read alongside the handler, which bounds the body.
  const fingerprint = fingerprintOf(req);
  fingerprint.catch(() => undefined); // a body cut off: the request fails anyway, the key is released below
  let settled = false;
  const settle = async (finished: boolean): Promise<void> => {
    if (settled) return;
    settled = true;
    const sent = finished ? taken() : undefined;
    const kept = sent ? keepable(sent) : undefined;
    // A body not received whole has no fingerprint (an early answer: 413, 408), and waiting for it could be for ever.
    const print = req.complete ? await fingerprint.catch(() => undefined) : undefined;
    if (!sent || !kept || !final(sent.status) || print === undefined) await store.release(key, claim.token);
    else {
      const headers: Record<string, string> = {};
      for (const name of hooks.keptHeaders ?? []) {
        const value = res.getHeader(name);
        if (value !== undefined) headers[name] = String(value);
      }
      await store.keep(key, claim.token, {
        fingerprint: print,
        status: sent.status,
        contentType: sent.contentType,
        body: kept.body.toString('base64'),
        ...(hooks.keptHeaders ? { headers } : {}),
        ...(kept.withheld.length > 0 ? { withheld: kept.withheld } : {}),
      });
    }
  };
  // Settled when the handler ends its answer (before the end is sent); a response cut off before that releases the key.
  const taken = capture(res, () => settle(true));
  res.once('close', () => void settle(false).catch(() => undefined));
  await handle();
}

/** In one process (tests, a gateway without DATABASE_URL): the same rules, forgotten after `ttlMs`. */
export function memoryIdempotencyStore(ttlMs = 24 * 60 * 60 * 1000): IdempotencyStore {
  const entries = new Map<string, { token: number; at: number; response?: KeptResponse }>();
  let next = 1;
  return {
    async claim(key) {
      const entry = entries.get(key);
      if (entry && Date.now() - entry.at < ttlMs) return entry.response ? { kind: 'done', response: entry.response } : { kind: 'running' };
      const token = next++;
      entries.set(key, { token, at: Date.now() });
      return { kind: 'claimed', token };
    },
    async keep(key, token, response) {
      if (entries.get(key)?.token === token) entries.set(key, { token, at: Date.now(), response });
    },
    async release(key, token) {
      if (entries.get(key)?.token === token) entries.delete(key);
    },
  };
}
