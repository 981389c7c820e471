import http, { type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http';
import https from 'node:https';
import type { Request, Response, NextFunction } from 'express';
import { notFound, unavailable } from '@dam/errors';
import { hasBody } from '@dam/auth-tokens';
import { ACCEL } from '@dam/http';
import type { Logger } from '@dam/logging';

// RFC 9110 §7.6.1: connection-specific headers never cross a proxy.
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
]);

export interface ProxyOptions {
  logger: Logger;
  /** Idle time on an upstream service's socket before the request is abandoned. */
  timeoutMs: number;
  /** The same for the object store's (ACCEL downloads). */
  storeTimeoutMs: number;
}

/**
 * Abandons `request` once its socket has been idle `ms` because of the other side, not because our own client
 * reads slowly (then the response is paused and the socket idles by our doing: a slow download is no fault).
 */
function abandonWhenIdle(request: http.ClientRequest, ms: number, why: string): void {
  request.setTimeout(ms, () => {
    if (request.socket?.isPaused()) return;
    request.destroy(Object.assign(new Error(why), { code: 'ETIMEDOUT' }));
  });
}

export interface ForwardOptions {
  target: string;
  serviceName: string;
  /** Headers removed from the incoming request (credentials, forged principal headers). */
  strip: readonly string[];
  /**
   * Headers the gateway sets for the request as sent (its own token, bound to that method, path and body): `body` is
   * the exact bytes sent, or `streamed` for a body passed through unread (security review I6).
   */
  set: (pathAndQuery: string, body: Buffer | 'streamed') => Record<string, string>;
  /** Offer to stream object bytes from the object store when the upstream names them (see ACCEL). */
  accel?: boolean;
  /**
   * Told once how the exchange ended: a 200 answer whose whole body (at most `maxBytes`) came from the upstream, with
   * its headers as the upstream sent them; `undefined` for anything else (another status, a larger body, a failure,
   * the client gone first). The body is relayed as always; this only keeps a copy (the gateway's Get Data cache).
   */
  onAnswer?: { maxBytes: number; done(answer: UpstreamAnswer | undefined): void };
}

export interface UpstreamAnswer {
  headers: IncomingHttpHeaders;
  body: Buffer;
}

const ACCEL_HEADERS: ReadonlySet<string> = new Set(Object.values(ACCEL));

function requestHeaders(req: Request, res: Response, opts: ForwardOptions, url: URL, body: Buffer | 'streamed'): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  const strip = new Set(opts.strip.map((h) => h.toLowerCase()));
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined || HOP_BY_HOP.has(name) || strip.has(name) || ACCEL_HEADERS.has(name)) continue;
    out[name] = value;
  }
  if (opts.accel) out[ACCEL.request] = 's3';
  // The client address the gateway determined (TRUST_PROXY decides which hops count), never the client's own
  // claim: upstreams see one address, the same one the service token carries.
  out['x-forwarded-for'] = req.ip ?? req.socket.remoteAddress ?? '';
  out['x-forwarded-proto'] = req.protocol;
  if (req.headers.host) out['x-forwarded-host'] = req.headers.host;
  // The id this request is logged under here, so upstream logs line up with ours.
  const requestId = res.getHeader('x-request-id');
  if (requestId) out['x-request-id'] = String(requestId);
  Object.assign(out, opts.set(url.pathname + url.search, body));
  return out;
}

function responseHeaders(headers: IncomingHttpHeaders): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined && !HOP_BY_HOP.has(name) && !ACCEL_HEADERS.has(name)) out[name] = value;
  }
  return out;
}

/**
 * An answer's body to the client. `pipe`, not `pipeline`: pipeline builds an AbortController and a DOMException for
 * every response it ends (3 % of the gateway's CPU per small request, measured). A body that fails or is cut off
 * cuts the client connection too, so a truncated body is never taken for a whole one.
 */
function relay(body: http.IncomingMessage, res: Response, request: http.ClientRequest): void {
  const cut = () => {
    request.destroy();
    if (!res.writableEnded) res.destroy();
  };
  body.once('error', cut);
  body.once('aborted', cut);
  body.pipe(res);
}

/** A copy of a 200 answer's body as it is relayed, given to `done` at its end (undefined if not kept whole). */
function keepCopy(upRes: http.IncomingMessage, maxBytes: number, done: (a?: UpstreamAnswer) => void): void {
  if (upRes.statusCode !== 200) {
    done();
    return;
  }
  let chunks: Buffer[] | undefined = [];
  let size = 0;
  upRes.on('data', (chunk: Buffer) => {
    if (!chunks) return;
    size += chunk.length;
    if (size > maxBytes) chunks = undefined;
    else chunks.push(chunk);
  });
  upRes.once('end', () => done(chunks ? { headers: upRes.headers, body: Buffer.concat(chunks, size) } : undefined));
  upRes.once('error', () => done());
  upRes.once('aborted', () => done());
}

/**
 * Streams a request to an upstream and its answer back, both ways, never buffering bodies (downloads are
 * large; Range, Content-Range, ETag and Content-Disposition pass untouched). A body the JSON parser already
 * consumed is re-sent serialized. Failing before the answer starts → 503 contract error; after → the
 * client connection is cut so a truncated body is never taken for a whole one.
 */
export function createProxy(opts: ProxyOptions) {
  // Idle kept-alive sockets are closed here before the upstream closes them: without `timeout` Node's agent keeps a
  // free socket until the server's keep-alive timeout (Node's 5 s) ends it, and a request that takes the socket at
  // that moment fails with ECONNRESET or "socket hang up" (503 to the client; seen under load, bench/load.bench.ts).
  // Requests set their own timeout (abandonWhenIdle); this one applies to sockets back in the pool.
  const agents = { http: new http.Agent({ keepAlive: true, timeout: 4000 }), https: new https.Agent({ keepAlive: true, timeout: 4000 }) };
  /** A request over the kept-alive agent of the URL's scheme. */
  const requestTo = (url: URL, options: { method: string; headers: OutgoingHttpHeaders }): http.ClientRequest =>
    url.protocol === 'https:' ? https.request(url, { ...options, agent: agents.https }) : http.request(url, { ...options, agent: agents.http });

  const forward = (req: Request, res: Response, next: NextFunction, fwd: ForwardOptions): void => {
    const url = new URL(req.originalUrl, fwd.target);
    const consumed = req.readableEnded;
    let replay: Buffer | undefined;
    if (consumed) replay = req.body === undefined ? Buffer.alloc(0) : Buffer.from(JSON.stringify(req.body));
    // No body at all is sent as such (a length of 0, never a chunked empty body), and signed as the empty body.
    else if (!hasBody(req.headers)) replay = Buffer.alloc(0);
    const headers = requestHeaders(req, res, fwd, url, replay ?? 'streamed');
    if (replay) {
      headers['content-length'] = String(replay.length);
      delete headers['content-encoding'];
    }
    const upstream = requestTo(url, { method: req.method, headers });
    abandonWhenIdle(upstream, opts.timeoutMs, `${fwd.serviceName} timed out`);

    let answered = false;
    const answer = (a?: UpstreamAnswer): void => {
      if (answered || !fwd.onAnswer) return;
      answered = true;
      fwd.onAnswer.done(a);
    };
    let failed = false;
    const fail = (err: Error): void => {
      answer();
      if (failed) return;
      failed = true;
      if (res.headersSent) {
        opts.logger.warn({ err, upstream: fwd.serviceName }, 'upstream failed mid-response');
        res.destroy();
        return;
      }
      opts.logger.warn({ err, upstream: fwd.serviceName }, 'upstream unavailable');
      next(unavailable(`The ${fwd.serviceName} service is unavailable`));
    };

    upstream.on('error', fail);
    upstream.on('response', (upRes) => {
      const accelUrl = upRes.headers[ACCEL.redirect];
      if (fwd.accel && typeof accelUrl === 'string' && (upRes.statusCode === 200 || upRes.statusCode === 206)) {
        answer();
        upRes.resume();
        fromStore(accelUrl, upRes, res, fail, next, fwd.serviceName);
        return;
      }
      if (fwd.onAnswer) keepCopy(upRes, fwd.onAnswer.maxBytes, answer);
      res.writeHead(upRes.statusCode ?? 502, responseHeaders(upRes.headers));
      relay(upRes, res, upstream);
    });
    // The client went away: stop the upstream work too.
    res.on('close', () => {
      if (!res.writableFinished) {
        answer();
        upstream.destroy();
      }
    });

    if (replay) upstream.end(replay);
    else {
      req.once('error', (err) => upstream.destroy(err));
      req.pipe(upstream);
    }
  };

  /**
   * The bytes the upstream pointed at (ACCEL): fetched from the object store with the range the upstream
   * granted, sent with the upstream's status and headers. A missing object is the contract's 404.
   */
  const fromStore = (url: string, upRes: http.IncomingMessage, res: Response, fail: (e: Error) => void, next: NextFunction, serviceName: string): void => {
    const headers = responseHeaders(upRes.headers);
    headers['content-length'] = String(upRes.headers[ACCEL.length] ?? '0');
    const granted = /^bytes (\d+)-(\d+)\//.exec(String(upRes.headers['content-range'] ?? ''));
    const store = requestTo(new URL(url), {
      method: 'GET',
      headers: upRes.statusCode === 206 && granted ? { range: `bytes=${granted[1]}-${granted[2]}` } : {},
    });
    abandonWhenIdle(store, opts.storeTimeoutMs, 'the object store timed out');
    store.on('error', fail);
    store.on('response', (body) => {
      if (body.statusCode !== 200 && body.statusCode !== 206) {
        body.resume();
        if (body.statusCode === 404) {
          next(notFound('CONTENT_NOT_FOUND', 'The stored content of this asset is missing'));
          return;
        }
        fail(new Error(`the object store answered ${body.statusCode} for ${serviceName}'s object`));
        return;
      }
      res.writeHead(upRes.statusCode ?? 200, headers);
      relay(body, res, store);
    });
    res.on('close', () => {
      if (!res.writableFinished) store.destroy();
    });
    store.end();
  };

  return {
    forward,
    close: () => {
      agents.http.destroy();
      agents.https.destroy();
    },
  };
}

export type Proxy = ReturnType<typeof createProxy>;
