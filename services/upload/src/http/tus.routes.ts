import { createHash, randomBytes } from 'node:crypto';
import { PassThrough, Readable, Transform } from 'node:stream';
import { PERMISSION, callerKey, principalOf, requireAny, type Principal } from '@dam/auth-tokens';
import { badRequest, isAppError, notFound, payloadTooLarge, type AppError } from '@dam/errors';
import { idempotent, isDependencyUnavailable, mapError, memoryIdempotencyStore, watchIdle, type IdempotencyStore } from '@dam/http';
import type * as TusServer from '@tus/server' with { 'resolution-mode': 'import' };
import { Router, type Request as ExpressRequest, type RequestHandler, type Response as ExpressResponse } from 'express';
import { TUS_PREFIX, type TusS3Store } from '../adapters/tus-store';
import { uploadTooLarge } from '../domain/upload.errors';
import { finishResumableUpload } from '../use-cases/finish-resumable.use-case';
import { parseCustomMetadata, type UploadDeps } from '../use-cases/upload-assets.use-case';
import { closeAfterAnswer, hasBody, principalSlots, type PrincipalSlots } from './body-limits';

import { TUS_PATH } from './tus-path';

// @tus/* ship ES modules only: Node 20.19+ requires them (jest's module system does not, so only main.ts and
// service processes load this file; app.ts takes the router from main.ts).
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { Server } = require('@tus/server') as typeof TusServer;
/** Who created an upload: kept in its server-side metadata, never taken from the client. */
const OWNER_KEY = 'dam_owner';
const CHECKSUM_ALGORITHMS = { md5: 'md5', sha1: 'sha1' } as const;
/** The tus headers a browser may send and read across origins, besides the protocol's own. */
const ALLOWED_HEADERS = ['X-Upload-Key', 'X-Service-Api-Key', 'Upload-Checksum', 'Idempotency-Key', 'X-Request-Id'];
const EXPOSED_HEADERS = ['X-Asset-Id', 'X-Request-Id', 'Upload-Expires', 'Tus-Checksum-Algorithm'];

export interface TusDeps extends UploadDeps {
  store: TusS3Store;
  /** Idempotency-Key on the creation POST (CONTRACT §13); in this process only without it. */
  idempotency?: IdempotencyStore;
  /** One request at a time per upload across replicas (tus-locker.ts); tus's in-memory locker without it. */
  locker?: TusServer.Locker;
  /** Request bodies at once per caller, counted with Upload Asset's (429 beyond); no cap without it. */
  slots?: PrincipalSlots;
}
/** A creation's answer is in its headers: they are kept and replayed with it. */
const KEPT_HEADERS = ['location', 'upload-offset', 'upload-expires', 'x-asset-id', 'tus-resumable'];

interface Caller {
  principal: Principal;
  /** The public URL of the tus endpoint as this request reached it. */
  endpoint: string;
  /** `?uploadkey=…` when the request authenticated with it (browser widgets): the upload's URL carries it on. */
  query: string;
  /** An upload this request finished: its objects go once the answer is out (the handler still reads them). */
  finished?: string;
}

const ownerOf = (p: Principal): string => `${p.group_id}:${p.user_id}`;
/** The upload a request's URL names (its last path segment), as the store knows it. */
function uploadIdOf(url: string): string | undefined {
  const last = new URL(url, 'http://localhost').pathname.split('/').pop() ?? '';
  return /^[0-9a-f]{32}$/.test(last) ? `${TUS_PREFIX}${last}` : undefined;
}
const chunkTooLarge = (room: number): AppError => payloadTooLarge(`The request body is larger than the ${room} bytes left of the upload`, 'UPLOAD_TOO_LARGE');
const uploadNotFound = () => notFound('UPLOAD_NOT_FOUND', 'The upload does not exist or has expired');

/** Plain-text tus protocol errors as the contract's error body (CONTRACT §1). */
const TUS_CODES: Record<number, string> = {
  400: 'INVALID_TUS_REQUEST',
  403: 'INVALID_TUS_REQUEST',
  404: 'UPLOAD_NOT_FOUND',
  409: 'UPLOAD_OFFSET_MISMATCH',
  410: 'UPLOAD_EXPIRED',
  412: 'TUS_RESUMABLE_REQUIRED',
  413: 'UPLOAD_TOO_LARGE',
  415: 'INVALID_CONTENT_TYPE',
  423: 'UPLOAD_LOCKED',
  460: 'CHECKSUM_MISMATCH',
};

/**
 * Resumable uploads, tus 1.0.0 (CONTRACT §12) at `{upload}/api/v1/uploads/tus`: @tus/server over @tus/s3-store
 * (creation, creation-with-upload, termination, expiration), with checksum (md5, sha1) verified here before a byte
 * reaches the upload, every request but OPTIONS authenticated (upload keys accepted), each upload visible only to
 * the user who created it. The last byte makes the asset through Upload Asset's own path; the response that
 * carries it has `X-Asset-Id`.
 */
export function tusRoutes(deps: TusDeps, authenticate: RequestHandler): Router {
  const callers = new WeakMap<Request, Caller>();
  const callerOf = (req: Request): Caller => {
    const c = callers.get(req);
    if (!c) throw new Error('tus request without its caller');
    return c;
  };

  const tus = new Server({
    path: TUS_PATH,
    datastore: deps.store,
    maxSize: deps.maxUploadBytes,
    ...(deps.locker ? { locker: deps.locker } : {}),
    allowedHeaders: ALLOWED_HEADERS,
    exposedHeaders: EXPOSED_HEADERS,
    namingFunction: () => `${TUS_PREFIX}${randomBytes(16).toString('hex')}`,
    generateUrl: (req, { id }) => `${callerOf(req).endpoint}/${id.slice(TUS_PREFIX.length)}${callerOf(req).query}`,
    getFileIdFromRequest: (req) => uploadIdOf(req.url),
    onIncomingRequest: async (req, id) => {
      if (req.method === 'POST') return;
      const upload = await deps.store.getUpload(id).catch(() => undefined);
      // Another user's upload is as absent as one that never existed.
      if (!upload || upload.metadata?.[OWNER_KEY] !== ownerOf(callerOf(req).principal)) throw uploadNotFound();
    },
    onUploadCreate: async (req, upload) => {
      const meta = upload.metadata ?? {};
      const name = meta.filename ?? 'upload';
      if (name.length === 0 || name.length > 1024) throw badRequest('INVALID_UPLOAD_METADATA', 'filename must have 1 to 1024 characters');
      if (meta.custom_metadata) parseCustomMetadata(meta.custom_metadata);
      return { metadata: { ...meta, [OWNER_KEY]: ownerOf(callerOf(req).principal) } };
    },
    onUploadFinish: async (req, upload) => {
      const caller = callerOf(req);
      const { principal } = caller;
      try {
        const file = await finishResumableUpload(deps, principal, {
          key: upload.id,
          name: upload.metadata?.filename ?? 'upload',
          customMetadata: upload.metadata?.custom_metadata ? parseCustomMetadata(upload.metadata.custom_metadata) : undefined,
        });
        caller.finished = upload.id;
        deps.logger.info({ upload: upload.id, asset_id: file.id, size: file.size }, 'resumable upload finished');
        return { headers: { 'X-Asset-Id': file.id } };
      } catch (error) {
        // The asset could not be made: the upload goes, so a client's retry starts a new one instead of finding
        // a finished upload with no asset.
        await deps.store.remove(upload.id).catch(() => undefined);
        throw error;
      }
    },
    onResponseError: (_req, err) => {
      if (isDependencyUnavailable(err)) deps.logger.warn({ err }, 'a dependency is unavailable: answered 503');
      else if (!isAppError(err) && !('status_code' in err)) deps.logger.error({ err }, 'resumable upload failed');
      if (isAppError(err)) {
        const mapped = mapError(err);
        return { status_code: mapped.status, body: JSON.stringify(mapped.body) };
      }
      return undefined;
    },
  });

  const slots = deps.slots ?? principalSlots(0);
  const idleMs = deps.idleTimeoutMs ?? 0;
  const handle: RequestHandler = async (req, res) => {
    const principal = principalOf(res);
    requireAny(principal, [PERMISSION.CREATE_ASSET]);
    const reads = req.method === 'POST' || req.method === 'PATCH';
    // A body is read as Upload Asset reads one: within the caller's uploads at once, and abandoned when it stalls.
    if (reads && hasBody(req)) slots.enter(principal, req, res);
    let staged: string | undefined;
    try {
      let body: Readable | undefined;
      let idled: AppError | undefined;
      let stopIdle = (): void => undefined;
      const checksum = req.header('upload-checksum');
      const room = reads && checksum !== undefined ? await roomOf(req, principal) : undefined;
      if (room !== undefined && checksum !== undefined) {
        const verified = await stageChunk(req, checksum, room);
        staged = verified.key;
        if ('mismatch' in verified) {
          send(res, 460, new Headers({ 'Tus-Resumable': '1.0.0' }), 'The checksum of the request body does not match Upload-Checksum');
          return;
        }
        body = await deps.storage.getStream(verified.key);
      } else if (reads) {
        // Through a pass-through, so that a stalled client's body can be ended with an error while its socket
        // stays open for the 408.
        const pass = new PassThrough();
        req.pipe(pass);
        const watching = watchIdle(req, idleMs, (error) => {
          idled = error;
          req.unpipe(pass);
          pass.destroy(error);
        });
        // A client that goes away mid-body: the body ends there, as @tus/server's own Node handler ends it (the bytes
        // received are kept; HEAD tells the offset). Before, the PATCH waited for the rest for ever, holding its
        // upload's lease and the part slot of the store it was filling (tus-store.ts).
        const cut = () => {
          if (req.complete || pass.destroyed) return;
          req.unpipe(pass);
          pass.end();
        };
        req.once('close', cut);
        stopIdle = () => {
          watching();
          req.off('close', cut);
        };
        body = pass;
      }
      const web = webRequest(req, body);
      const key = typeof req.query.uploadkey === 'string' && principal.via === 'upload_key' ? req.query.uploadkey : undefined;
      const caller: Caller = {
        principal,
        endpoint: `${req.protocol}://${req.get('host') ?? 'localhost'}${TUS_PATH}`,
        query: key ? `?uploadkey=${encodeURIComponent(key)}` : '',
      };
      callers.set(web, caller);
      const answer = await tus.handleWeb(web).finally(stopIdle);
      if (idled) {
        await answer.body?.cancel();
        throw idled;
      }
      await sendWeb(res, answer);
      const { finished } = caller;
      if (finished) {
        await deps.store
          .discard(finished)
          .catch((error: unknown) => deps.logger.warn({ err: error, upload: finished }, 'could not remove a finished upload: the sweep will'));
      }
    } catch (error) {
      // The body may be half read: do not keep the connection for another request.
      if (reads && !req.complete) closeAfterAnswer(req, res);
      throw error;
    } finally {
      if (staged)
        await deps.storage
          .remove(staged)
          .catch((error: unknown) => deps.logger.warn({ err: error, key: staged }, 'could not remove a verified chunk: the sweep will'));
    }
  };

  /**
   * How many bytes a request with Upload-Checksum may bring: what is left of its upload (a creation: its
   * Upload-Length). A declared Content-Length beyond it is refused before a byte is read, as tus does without a
   * checksum. Undefined when tus refuses the request before reading its body (an upload that is not the caller's,
   * another offset).
   */
  const roomOf = async (req: ExpressRequest, principal: Principal): Promise<number | undefined> => {
    let room = deps.maxUploadBytes;
    if (req.method === 'POST') {
      const length = Number(req.header('upload-length'));
      if (Number.isSafeInteger(length) && length >= 0) room = Math.min(room, length);
    } else {
      const id = uploadIdOf(req.originalUrl);
      const upload = id ? await deps.store.getUpload(id).catch(() => undefined) : undefined;
      // Not the caller's (404), or at another offset (409): tus answers without reading the body.
      if (!upload || upload.metadata?.[OWNER_KEY] !== ownerOf(principal) || Number(req.header('upload-offset')) !== upload.offset) return undefined;
      room = Math.max(0, Math.min(room, upload.size ?? room) - upload.offset);
    }
    const declared = Number(req.header('content-length'));
    if (Number.isFinite(declared) && declared > room) throw chunkTooLarge(room);
    return room;
  };

  /**
   * tus checksum extension: the body streams into a staging object of the store (never to a local disk, never
   * whole in memory) while hashed, at most `room` bytes, and reaches the upload only when it matches
   * `Upload-Checksum: <algorithm> <base64 digest>`, so a mismatched chunk leaves no byte in the upload.
   */
  const stageChunk = async (req: ExpressRequest, header: string, room: number): Promise<{ key: string } & ({ verified: true } | { mismatch: true })> => {
    const [algorithm, expected] = header.trim().split(/\s+/);
    const hashName = CHECKSUM_ALGORITHMS[(algorithm ?? '').toLowerCase() as keyof typeof CHECKSUM_ALGORITHMS];
    if (!hashName || !expected)
      throw badRequest(
        'UNSUPPORTED_CHECKSUM_ALGORITHM',
        `Upload-Checksum must be "<algorithm> <base64>" with one of: ${Object.keys(CHECKSUM_ALGORITHMS).join(', ')}`,
      );
    const key = `${TUS_PREFIX}chunk-${randomBytes(16).toString('hex')}`;
    const hash = createHash(hashName);
    let size = 0;
    let failure: unknown;
    const meter = new Transform({
      transform(chunk: Buffer, _enc, done) {
        size += chunk.length;
        if (size > room) return done(chunkTooLarge(room));
        hash.update(chunk);
        done(null, chunk);
      },
    });
    const fail = (error: unknown) => {
      failure ??= error;
      req.unpipe(meter);
      meter.destroy(error instanceof Error ? error : new Error(String(error)));
    };
    meter.once('error', (error) => (failure ??= error));
    req.once('error', fail);
    req.once('close', () => {
      if (!req.complete) fail(new Error('the request was aborted'));
    });
    req.pipe(meter);
    const stopIdle = watchIdle(req, idleMs, fail);
    try {
      await deps.storage.putStream(key, meter, { contentType: 'application/octet-stream' });
      if (failure !== undefined) throw failure;
    } catch (error) {
      await deps.storage.remove(key).catch(() => undefined);
      throw failure ?? error;
    } finally {
      stopIdle();
    }
    return hash.digest('base64') === expected ? { key, verified: true } : { key, mismatch: true };
  };

  const idempotency = deps.idempotency ?? memoryIdempotencyStore();
  // A repeat's body is read only to compare it: within the same bounds as a creation's.
  const repeatBody = { idleTimeoutMs: idleMs, maxBytes: deps.maxUploadBytes, tooLarge: uploadTooLarge };
  const create: RequestHandler = async (req, res, next) => {
    const principal = principalOf(res);
    requireAny(principal, [PERMISSION.CREATE_ASSET]);
    if (hasBody(req)) slots.enter(principal, req, res);
    await idempotent(idempotency, `${principal.group_id}:${callerKey(principal)}`, req, res, () => handle(req, res, next), {
      keptHeaders: KEPT_HEADERS,
      answeredEarly: closeAfterAnswer,
      repeatBody,
    });
  };

  const router = Router();
  // OPTIONS (discovery and CORS preflights) carries no credentials.
  router.options([TUS_PATH, `${TUS_PATH}/:id`], async (req, res) => {
    const answer = await tus.handleWeb(webRequest(req, undefined));
    answer.headers.set('Tus-Checksum-Algorithm', Object.keys(CHECKSUM_ALGORITHMS).join(','));
    await sendWeb(res, answer);
  });
  router.post(TUS_PATH, authenticate, create);
  router.head(`${TUS_PATH}/:id`, authenticate, handle);
  router.patch(`${TUS_PATH}/:id`, authenticate, handle);
  router.delete(`${TUS_PATH}/:id`, authenticate, handle);
  return router;
}

function webRequest(req: ExpressRequest, body: Readable | undefined): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(', ') : value);
  }
  const url = `http://${req.get('host') ?? 'localhost'}${req.originalUrl}`;
  return new Request(url, {
    method: req.method,
    headers,
    ...(body ? { body: Readable.toWeb(body) as ReadableStream, duplex: 'half' } : {}),
  } as RequestInit);
}

/** A tus answer to the client; plain-text errors become the contract's error body, a 500 of the store a 503. */
async function sendWeb(res: ExpressResponse, answer: globalThis.Response): Promise<void> {
  if (answer.status >= 400) {
    const text = (await answer.text()).trim();
    if (text.startsWith('{"error"')) {
      // An AppError of a hook, already the contract's body.
      copyHeaders(res, answer.headers);
      res.status(answer.status).type('application/json').send(text);
      return;
    }
    send(res, answer.status, answer.headers, text);
    return;
  }
  // tus answers carry headers and at most a short text (GET, which would stream the bytes, is not routed).
  const body = Buffer.from(await answer.arrayBuffer());
  res.status(answer.status);
  answer.headers.forEach((v, k) => res.setHeader(k, v));
  res.end(body.length > 0 ? body : undefined);
}

/** The protocol's headers of an answer whose body is replaced. */
function copyHeaders(res: ExpressResponse, headers: Headers): void {
  headers.forEach((v, k) => {
    if (k !== 'content-length' && k !== 'content-type') res.setHeader(k, v);
  });
}

function send(res: ExpressResponse, status: number, headers: Headers, message: string): void {
  const store = status >= 500;
  const code = store ? 'UPLOAD_STORE_UNAVAILABLE' : (TUS_CODES[status] ?? 'INVALID_TUS_REQUEST');
  copyHeaders(res, headers);
  res
    .status(store ? 503 : status)
    .json({ error: { code, message: store ? 'The upload store is unavailable: retry later' : message || 'Invalid tus request' } });
}
