import http, { type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http';
import https from 'node:https';
import { pipeline } from 'node:stream';
import type { Request, Response, NextFunction } from 'express';
import { unavailable } from '@dam/errors';
import type { Logger } from '@dam/logging';

// RFC 9110 §7.6.1: connection-specific headers never cross a proxy.
const HOP_BY_HOP = new Set([
  'connection', 'keep-alive', 'proxy-authenticate', 'proxy-authorization', 'proxy-connection', 'te', 'trailer',
  'transfer-encoding', 'upgrade', 'host',
]);

export interface ProxyOptions {
  logger: Logger;
  timeoutMs: number;
}

export interface ForwardOptions {
  target: string;
  serviceName: string;
  /** Headers removed from the incoming request (credentials, forged principal headers). */
  strip: readonly string[];
  /** Headers the gateway sets for the request as sent (its own token, bound to that method and path). */
  set: (pathAndQuery: string) => Record<string, string>;
}

function requestHeaders(req: Request, res: Response, opts: ForwardOptions, url: URL): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  const strip = new Set(opts.strip.map((h) => h.toLowerCase()));
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined || HOP_BY_HOP.has(name) || strip.has(name)) continue;
    out[name] = value;
  }
  // The client address the gateway determined (TRUST_PROXY decides which hops count), never the client's own
  // claim: upstreams see one address, the same one the service token carries.
  out['x-forwarded-for'] = req.ip ?? req.socket.remoteAddress ?? '';
  out['x-forwarded-proto'] = req.protocol;
  if (req.headers.host) out['x-forwarded-host'] = req.headers.host;
  // The id this request is logged under here, so upstream logs line up with ours.
  const requestId = res.getHeader('x-request-id');
  if (requestId) out['x-request-id'] = String(requestId);
  Object.assign(out, opts.set(url.pathname + url.search));
  return out;
}

function responseHeaders(headers: IncomingHttpHeaders): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined && !HOP_BY_HOP.has(name)) out[name] = value;
  }
  return out;
}

/**
 * Streams a request to an upstream and its answer back, both ways, never buffering bodies (downloads are
 * large; Range, Content-Range, ETag and Content-Disposition pass untouched). A body the JSON parser already
 * consumed is re-sent serialized. Failing before the answer starts → 503 contract error; after → the
 * client connection is cut so a truncated body is never taken for a whole one.
 */
export function createProxy(opts: ProxyOptions) {
  const agents = { http: new http.Agent({ keepAlive: true }), https: new https.Agent({ keepAlive: true }) };

  const forward = (req: Request, res: Response, next: NextFunction, fwd: ForwardOptions): void => {
    const url = new URL(req.originalUrl, fwd.target);
    const headers = requestHeaders(req, res, fwd, url);
    const consumed = req.readableEnded;
    let replay: Buffer | undefined;
    if (consumed) {
      replay = req.body === undefined ? Buffer.alloc(0) : Buffer.from(JSON.stringify(req.body));
      headers['content-length'] = String(replay.length);
      delete headers['content-encoding'];
    }
    const lib = url.protocol === 'https:' ? https : http;
    const upstream = lib.request(url, {
      method: req.method,
      headers,
      agent: url.protocol === 'https:' ? agents.https : agents.http,
    });
    upstream.setTimeout(opts.timeoutMs, () => upstream.destroy(new Error(`${fwd.serviceName} timed out`)));

    let failed = false;
    const fail = (err: Error): void => {
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
      res.writeHead(upRes.statusCode ?? 502, responseHeaders(upRes.headers));
      pipeline(upRes, res, (err) => {
        if (err) {
          upstream.destroy();
          if (!res.writableEnded) res.destroy();
        }
      });
    });
    // The client went away: stop the upstream work too.
    res.on('close', () => {
      if (!res.writableFinished) upstream.destroy();
    });

    if (replay) upstream.end(replay);
    else {
      pipeline(req, upstream, (err) => {
        if (err) upstream.destroy(err);
      });
    }
  };

  return { forward, close: () => { agents.http.destroy(); agents.https.destroy(); } };
}

export type Proxy = ReturnType<typeof createProxy>;
