import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { isAllowListed, isForbiddenAddress, outboundUrlProblem } from './outbound-address';

/** Why an outbound download failed; `message` is for the asset's `errors.original`. */
export class OutboundError extends Error {
  constructor(
    readonly code: 'REFUSED_ADDRESS' | 'BAD_URL' | 'HTTP_STATUS' | 'TIMEOUT' | 'TOO_LARGE' | 'TOO_MANY_REDIRECTS' | 'RATE_LIMITED' | 'NETWORK',
    message: string,
    readonly status?: number,
    /** RATE_LIMITED: when a retry may find a token. */
    readonly retryAfterMs?: number,
  ) {
    super(message);
    this.name = 'OutboundError';
  }
}

export type HostRateDecision = { ok: true } | { ok: false; retryAfterMs: number };

/**
 * A token bucket per scope (a tenant) and host: `ratePerMinute` downloads, bursts of `burst`; no token → refused
 * at once, never a wait, with when to come back. One scope's burst never spends another's tokens. The refused are
 * told successive slots (each refusal until the next grant one token later), so their retries do not all come
 * back for the same token.
 */
export class HostRateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number; waiting: number }>();
  constructor(
    private readonly ratePerMinute: number,
    private readonly burst: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** A download from `host` for `scope` (default: one scope for all). */
  take(host: string, scope = ''): boolean {
    return this.attempt(host, scope).ok;
  }

  attempt(host: string, scope = ''): HostRateDecision {
    if (this.ratePerMinute <= 0) return { ok: true };
    const key = `${scope}\u0000${host}`;
    const now = this.now();
    const b = this.buckets.get(key) ?? { tokens: this.burst, at: now, waiting: 0 };
    b.tokens = Math.min(this.burst, b.tokens + ((now - b.at) * this.ratePerMinute) / 60_000);
    b.at = now;
    this.buckets.set(key, b);
    if (b.tokens < 1) {
      b.waiting = Math.min(b.waiting + 1, 10_000);
      return { ok: false, retryAfterMs: Math.ceil(((1 - b.tokens + b.waiting - 1) * 60_000) / this.ratePerMinute) };
    }
    b.tokens -= 1;
    b.waiting = Math.max(0, b.waiting - 1);
    // Bounded: full buckets hold no information and are dropped once there are many hosts.
    if (this.buckets.size > 10_000) for (const [h, x] of this.buckets) if (x.tokens >= this.burst - 1 && x.waiting === 0) this.buckets.delete(h);
    return { ok: true };
  }
}

export interface GuardedDownloadOptions {
  /** Hosts the guard lets through (and the only ones that may use plain http): INGEST_ALLOW_HOSTS. */
  allowHosts: readonly string[];
  /** Refused before reading when the server announces more (the caller also counts while streaming). */
  maxBytes: number;
  /** Until the response headers arrive. */
  connectTimeoutMs: number;
  /** Between two chunks of the body. */
  idleTimeoutMs: number;
  maxRedirects?: number;
  rateLimiter?: HostRateLimiter;
  /** Whose download this is (a tenant): each scope has its own rate per host. */
  rateScope?: string;
  userAgent?: string;
  /** DNS resolution (tests inject one); default `dns.lookup`. */
  resolve?: (host: string) => Promise<LookupAddress[]>;
}

export interface GuardedDownload {
  body: IncomingMessage;
  contentType: string | undefined;
  contentLength: number | undefined;
  finalUrl: string;
}

const resolveAll = (host: string): Promise<LookupAddress[]> =>
  new Promise((resolve, reject) => dnsLookup(host, { all: true }, (err, addresses) => (err ? reject(err) : resolve(addresses))));

/**
 * Checks where `url` would connect and returns the one address to connect to: every address the name resolves
 * to must be allowed (CONTRACT §11), unless the host is allow-listed. The request then connects to exactly this
 * address (no second lookup, so no DNS-rebinding gap).
 */
async function checkedAddress(url: URL, opts: Pick<GuardedDownloadOptions, 'allowHosts' | 'resolve'>): Promise<LookupAddress> {
  const literal = url.hostname.replace(/^\[|\]$/g, '');
  if (isIP(literal) && isForbiddenAddress(literal) && !isAllowListed(url, opts.allowHosts)) {
    throw new OutboundError('REFUSED_ADDRESS', `refused: ${literal} is a loopback, private, link-local or reserved address`);
  }
  const problem = outboundUrlProblem(url.href, opts.allowHosts);
  if (problem)
    throw new OutboundError(
      problem.includes('address') || problem.includes('public host') ? 'REFUSED_ADDRESS' : 'BAD_URL',
      `refused: ${url.hostname} ${problem}`,
    );
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const allowed = isAllowListed(url, opts.allowHosts);
  if (isIP(host)) return { address: host, family: isIP(host) };
  let addresses: LookupAddress[];
  try {
    addresses = await (opts.resolve ?? resolveAll)(host);
  } catch (error) {
    throw new OutboundError('NETWORK', `${host} cannot be resolved (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
  }
  if (addresses.length === 0) throw new OutboundError('NETWORK', `${host} resolves to no address`);
  const bad = addresses.find((a) => isForbiddenAddress(a.address));
  if (bad && !allowed)
    throw new OutboundError('REFUSED_ADDRESS', `refused: ${host} resolves to a loopback, private, link-local or reserved address (${bad.address})`);
  return addresses[0] as LookupAddress;
}

interface RequestShape {
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: Buffer;
  connectTimeoutMs: number;
  userAgent?: string;
}

/**
 * One request. A kept-alive connection the server closed just as it was reused (a receiver's idle timeout, e.g.
 * Node's 5 s, meeting our next request) fails before the server read anything: the request is sent once more on a
 * new connection, as Node's documentation advises, instead of counting as a failed attempt.
 */
async function requestOnce(url: URL, address: LookupAddress, opts: RequestShape): Promise<IncomingMessage> {
  try {
    return await sendRequest(url, address, opts, false);
  } catch (error) {
    if (!(error instanceof StaleConnection)) throw error;
    return sendRequest(url, address, opts, true);
  }
}

/** The server ended a reused idle connection before answering (the request went no further). */
class StaleConnection extends Error {}

function sendRequest(url: URL, address: LookupAddress, opts: RequestShape, fresh: boolean): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const pinned: LookupFunction = (_host, options, callback) => {
      if ((options as { all?: boolean }).all) (callback as (e: null, a: LookupAddress[]) => void)(null, [address]);
      else callback(null, address.address, address.family);
    };
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const req = send(url, {
      method: opts.method ?? 'GET',
      lookup: pinned,
      ...(fresh ? { agent: false } : {}),
      headers: { 'user-agent': opts.userAgent ?? 'dam-ingest/1', accept: '*/*', ...opts.headers },
    });
    const timer = setTimeout(
      () => req.destroy(new OutboundError('TIMEOUT', `no answer from ${url.hostname} within ${opts.connectTimeoutMs} ms`)),
      opts.connectTimeoutMs,
    );
    req.on('response', (res) => {
      clearTimeout(timer);
      // Defence in depth: the socket is connected where the check said.
      const remote = res.socket.remoteAddress?.replace(/^::ffff:/, '');
      if (remote && remote !== address.address.replace(/^::ffff:/, '')) {
        res.destroy();
        reject(new OutboundError('REFUSED_ADDRESS', `refused: connected to ${remote}, not the checked ${address.address}`));
        return;
      }
      resolve(res);
    });
    req.on('error', (error) => {
      clearTimeout(timer);
      if (req.reusedSocket && (error as NodeJS.ErrnoException).code === 'ECONNRESET') {
        reject(new StaleConnection(error.message));
        return;
      }
      reject(
        error instanceof OutboundError ? error : new OutboundError('NETWORK', `${url.hostname}: ${(error as NodeJS.ErrnoException).code ?? error.message}`),
      );
    });
    req.end(opts.body);
  });
}

/**
 * Opens a download that passes the outbound guard at every hop: the URL, every address its host resolves to,
 * the address actually connected to, and again after each redirect (at most `maxRedirects`, default 5). Answers
 * other than 2xx, announced sizes over `maxBytes`, slow servers and hosts over their rate fail with an
 * `OutboundError` whose message says why. The body is a stream (never held whole); it errors when no chunk
 * arrives for `idleTimeoutMs`.
 */
export async function openGuardedDownload(target: string, opts: GuardedDownloadOptions): Promise<GuardedDownload> {
  if (!URL.canParse(target)) throw new OutboundError('BAD_URL', 'the key is not a valid URL');
  let url = new URL(target);
  const maxRedirects = opts.maxRedirects ?? 5;
  for (let hop = 0; ; hop++) {
    const address = await checkedAddress(url, opts);
    const rate = opts.rateLimiter?.attempt(url.hostname.toLowerCase(), opts.rateScope) ?? { ok: true };
    if (!rate.ok) throw new OutboundError('RATE_LIMITED', `too many downloads from ${url.hostname}: try again later`, undefined, rate.retryAfterMs);
    const res = await requestOnce(url, address, opts);
    const status = res.statusCode ?? 0;
    if ([301, 302, 303, 307, 308].includes(status)) {
      res.resume();
      const location = res.headers.location;
      if (!location) throw new OutboundError('HTTP_STATUS', `${url.hostname} answered ${status} without a Location`, status);
      if (hop >= maxRedirects) throw new OutboundError('TOO_MANY_REDIRECTS', `more than ${maxRedirects} redirects`);
      url = new URL(location, url);
      continue;
    }
    if (status < 200 || status > 299) {
      res.resume();
      throw new OutboundError('HTTP_STATUS', `the server answered ${status}`, status);
    }
    const length = Number(res.headers['content-length']);
    if (Number.isFinite(length) && length > opts.maxBytes) {
      res.destroy();
      throw new OutboundError('TOO_LARGE', `the file is ${length} bytes, larger than ${opts.maxBytes}`);
    }
    res.setTimeout(opts.idleTimeoutMs, () => res.destroy(new OutboundError('TIMEOUT', `the download stalled for ${opts.idleTimeoutMs} ms`)));
    return { body: res, contentType: res.headers['content-type'], contentLength: Number.isFinite(length) ? length : undefined, finalUrl: url.href };
  }
}

/**
 * Where `url` may not be sent, checked as a delivery would (CONTRACT §11): the URL itself, then every address
 * its host resolves to. Undefined when it may. For settings that name destinations (webhook URLs).
 */
export async function outboundTargetProblem(
  url: string,
  opts: Pick<GuardedDownloadOptions, 'allowHosts' | 'resolve'> & { timeoutMs?: number },
): Promise<string | undefined> {
  if (!URL.canParse(url)) return 'must be an absolute http(s) URL';
  const resolve = opts.resolve ?? resolveAll;
  const timeoutMs = opts.timeoutMs ?? 2000;
  const bounded = (host: string) =>
    Promise.race([resolve(host), new Promise<never>((_, reject) => setTimeout(() => reject(new Error('lookup timed out')), timeoutMs).unref())]);
  try {
    await checkedAddress(new URL(url), { allowHosts: opts.allowHosts, resolve: bounded });
    return undefined;
  } catch (error) {
    if (error instanceof OutboundError && error.code === 'NETWORK') return undefined; // unresolvable now: the delivery checks again
    return error instanceof OutboundError ? error.message : String(error);
  }
}

export interface GuardedPostOptions extends Pick<GuardedDownloadOptions, 'allowHosts' | 'resolve' | 'userAgent'> {
  headers: Record<string, string>;
  body: Buffer;
  /** The whole exchange: connecting, sending and the answer's status line. */
  timeoutMs: number;
}

/**
 * POSTs `body` to `target` through the outbound guard (the URL, every resolved address, the address connected
 * to), never following a redirect; resolves with the answer's status (its body is read up to 64 KiB and
 * dropped). Throws an `OutboundError` when refused, unreachable or over `timeoutMs`.
 */
export async function guardedPost(target: string, opts: GuardedPostOptions): Promise<{ status: number }> {
  if (!URL.canParse(target)) throw new OutboundError('BAD_URL', 'not a valid URL');
  const url = new URL(target);
  const address = await checkedAddress(url, opts);
  const headers = { ...opts.headers, 'content-length': String(opts.body.length) };
  const res = await requestOnce(url, address, { method: 'POST', headers, body: opts.body, connectTimeoutMs: opts.timeoutMs, userAgent: opts.userAgent });
  const status = res.statusCode ?? 0;
  await new Promise<void>((resolve) => {
    let read = 0;
    res.on('data', (chunk: Buffer) => {
      read += chunk.length;
      if (read > 64 * 1024) res.destroy();
    });
    res.on('end', resolve);
    res.on('close', resolve);
    res.on('error', () => resolve());
    res.setTimeout(opts.timeoutMs, () => res.destroy());
  });
  return { status };
}
