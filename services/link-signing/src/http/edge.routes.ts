import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import { Router, type Request, type Response } from 'express';
import { planContent, safeDisposition, sendFileBytes } from '@dam/http';
import type { Logger } from '@dam/logging';
import { tierMayKeep, tierObjectsOf, type CacheTier } from '../adapters/cache-tier';
import type { CacheEntry, EdgeCache } from '../domain/ports';
import { contentMissing, edgeFormat, isMissing, serveDelivery, type ServedFile, type ServeDeliveryDeps } from '../use-cases/serve-delivery.use-case';

export interface EdgeDeps extends ServeDeliveryDeps {
  cache: EdgeCache;
  logger: Logger;
  /** The longest a shared cache may keep an answer (CDN_MAX_AGE, seconds); default 300. */
  cdnMaxAgeSeconds?: number;
  /** The nginx cache tier in front (CDN_TIER_PURGE_URLS): told which keys it fetched, to purge them later. */
  tier?: Pick<CacheTier, 'record'>;
}

export const DEFAULT_CDN_MAX_AGE_SECONDS = 300;

/** Where the edge's routes are (under `{cdn}`). */
export const EDGE_PREFIX = '/api/v1/files/content';

/**
 * What every edge answer starts with: CORS, and `no-store` until a served object says how long it may be kept, so
 * that no shared cache keeps a refusal (403, 404, 410, 429) past the moment it stops being true.
 */
export function cors(res: Response): void {
  // A signed link is its own credential: any page may embed or fetch it (players and viewers fetch by script).
  res.setHeader('Access-Control-Allow-Origin', '*');
  res.setHeader('Access-Control-Expose-Headers', 'Content-Length, Content-Range, Accept-Ranges, ETag, Last-Modified, X-Cache, Retry-After');
  res.setHeader('Cache-Control', 'no-store');
}

/**
 * CONTRACT §15: any cache may keep a served answer for N seconds, N the smaller of what is left of the link
 * (`expiry`, checked by serve-delivery before this runs) and CDN_MAX_AGE. A revoked accessID or a replaced original
 * therefore stops here at once and downstream within N seconds.
 */
export function sharedMaxAge(expiry: number, maxAgeSeconds: number, nowMs: number): number {
  const left = Number.isFinite(expiry) ? expiry - Math.floor(nowMs / 1000) : 0;
  return Math.max(0, Math.min(left, maxAgeSeconds));
}

/** `{cdn}`: what to serve is the use case's (serve-delivery); sending it, with Range and the byte cache, is here. */
export function edgeRoutes(deps: EdgeDeps): Router {
  const router = Router();
  const paths = [`${EDGE_PREFIX}/:id`, `${EDGE_PREFIX}/:id/*file`];

  router.options(paths, (_req, res) => {
    cors(res);
    res.setHeader('Access-Control-Allow-Methods', 'GET, HEAD, OPTIONS');
    res.setHeader('Access-Control-Allow-Headers', 'Range, If-None-Match, If-Range');
    res.setHeader('Access-Control-Max-Age', '86400');
    res.status(204).end();
  });

  router.get(paths, async (req, res) => {
    cors(res);
    const segments = (req.params as unknown as { file?: string[] }).file ?? [];
    const accept = req.header('accept');
    const lookedUpAt = Date.now();
    const delivery = await serveDelivery(deps, { assetId: String(req.params.id), segments, query: req.query, ...(accept ? { accept } : {}) });
    // format=auto (CONTRACT §15): the bytes follow Accept, so a cache in front keys on it.
    if (delivery.kind === 'object' && delivery.file.varyAccept) res.vary('Accept');
    const maxAge = sharedMaxAge(Number(req.query.expiry), deps.cdnMaxAgeSeconds ?? DEFAULT_CDN_MAX_AGE_SECONDS, deps.now?.() ?? Date.now());
    const cacheControl = `public, max-age=${maxAge}`;
    // The cache tier's fetch (deploy/cache): remembered so that a purge reaches the tier (adapters/cache-tier.ts), under
    // the object served and a transform's source; a format=auto answer only under a key naming its Accept class.
    const tierKey = req.header('x-cache-key');
    if (tierKey) {
      const file = delivery.kind === 'object' ? delivery.file : undefined;
      if (tierMayKeep(tierKey, file?.varyAccept ? (edgeFormat('auto', accept) ?? 'other') : undefined))
        deps.tier?.record(tierKey, String(req.params.id), tierObjectsOf(file), maxAge, lookedUpAt);
      else res.set('X-Accel-Expires', '0');
    }
    if (delivery.kind === 'playlist') {
      // Made for this link (every entry signed with it): its validator is its own digest.
      const { body, contentType } = delivery;
      const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 32)}"`;
      res.set({ 'Content-Type': contentType, 'Cache-Control': cacheControl, ETag: etag, 'X-Cache': 'BYPASS' });
      safeDisposition(res, contentType, 'inline');
      const ifNoneMatch = req.header('if-none-match');
      if (ifNoneMatch?.split(',').some((t) => t.trim().replace(/^W\//, '') === etag || t.trim() === '*')) return void res.status(304).end();
      res.status(200).set('Content-Length', String(body.length));
      if (req.method === 'HEAD') return void res.end();
      res.end(body);
      delivery.count(body.length);
      return;
    }
    const file = delivery.file.lastModified ? delivery.file : { ...delivery.file, lastModified: await lastModifiedOf(deps, delivery.file) };
    await sendObject(req, res, deps, file, cacheControl, delivery.count);
  });

  return router;
}

/**
 * An original's record has its size and MD5 but no date: the store's Last-Modified of that version, asked once. The
 * entry is keyed by the version's ETag, so a replaced original (another ETag) is asked again.
 */
const LAST_MODIFIED_ENTRIES = 10_000;
const lastModifiedByVersion = new Map<string, Date>();
async function lastModifiedOf(deps: EdgeDeps, f: ServedFile): Promise<Date | undefined> {
  const version = `${f.objectKey}\n${f.etag}`;
  const known = lastModifiedByVersion.get(version);
  if (known) return known;
  const stat = await deps.storage.stat(f.objectKey);
  if (!stat?.lastModified) return undefined;
  if (lastModifiedByVersion.size >= LAST_MODIFIED_ENTRIES) lastModifiedByVersion.delete(lastModifiedByVersion.keys().next().value as string);
  lastModifiedByVersion.set(version, stat.lastModified);
  return stat.lastModified;
}

/** Counts the bytes a body hands to the response until the response ends or the client goes. */
function counted(body: Readable, res: Response, count: (n: number) => void): Readable {
  let n = 0;
  let open = true;
  const onData = (chunk: Buffer) => {
    if (open) n += chunk.length;
  };
  body.on('data', onData);
  res.once('close', () => {
    open = false;
    body.off('data', onData);
    count(n);
  });
  return body;
}

/** The object's bytes (or the range asked), from the byte cache when it holds them, else from the object store. */
async function sendObject(req: Request, res: Response, deps: EdgeDeps, f: ServedFile, cacheControl: string, count: (n: number) => void): Promise<void> {
  const { size, etag } = f;
  // The cache tier asks for every object by 1 MiB slices (Range); an empty one has none, and a 416 would reach a
  // client that asked for no range: the whole (empty) object instead, as a server may ignore Range.
  if (size === 0 && req.header('x-cache-key')) delete req.headers.range;
  const plan = planContent(req, res, {
    contentType: f.contentType,
    etag,
    size,
    fileName: f.name,
    delivery: f.delivery,
    cacheControl,
    ...(f.lastModified ? { lastModified: f.lastModified } : {}),
  });
  if (plan.kind === 'not-modified') {
    res.end();
    return;
  }
  const { start, end, length } = plan;
  res.set('Content-Length', String(length));

  const key = deps.cache.keyOf(f.objectKey, etag);
  const entry = { key, objectKey: f.objectKey, assetId: f.target.asset_id, size };
  let hit = deps.cache.lookup(key);
  // Another request is filling this object: wait for that one read rather than start a second.
  if (!hit && deps.cache.pending(key)) hit = await deps.cache.pending(key);
  if (req.method === 'HEAD') {
    res.set('X-Cache', hit ? 'HIT' : 'MISS').end();
    return;
  }
  const fromFile = (stored: CacheEntry) => {
    res.set('X-Cache', 'HIT');
    return fileBody(stored.file, start, length, res, count, deps.logger);
  };
  if (hit) return fromFile(hit);
  if (size === 0) {
    res.set('X-Cache', 'MISS').end();
    return;
  }
  const cacheable = deps.cache.cacheable(size);
  res.set('X-Cache', cacheable ? 'MISS' : 'BYPASS');
  try {
    if (plan.partial || !cacheable) {
      // A part of the object goes straight through; the whole object is read into the cache beside it, once.
      if (cacheable) void deps.cache.fillFrom(entry, () => deps.storage.getStream(f.objectKey)).catch(() => undefined);
      await pipe(counted(await deps.storage.getRange(f.objectKey, start, end), res, count), res, deps.logger);
      return;
    }
    // The first read of a whole object: the same upstream stream feeds this client and the cache file. A request
    // arriving while another opens or fills it joins that one read and is then served from the file.
    let streamed: Promise<void> | undefined;
    const stored = await deps.cache.fillFrom(
      entry,
      () => deps.storage.getStream(f.objectKey),
      (body) => {
        streamed = pipe(counted(body, res, count), res, deps.logger);
      },
    );
    if (streamed) return await streamed;
    if (stored) return await fromFile(stored);
    // The fill it joined failed: read the object itself.
    await pipe(counted(await deps.storage.getStream(f.objectKey), res, count), res, deps.logger);
  } catch (error) {
    if (isMissing(error)) throw contentMissing();
    throw error;
  }
}

/** A byte-cache file to the client (two reused buffers, see sendFileBytes), counted like `counted`; a failure cuts the connection. */
async function fileBody(file: string, start: number, length: number, res: Response, count: (n: number) => void, logger: Logger): Promise<void> {
  let n = 0;
  res.once('close', () => count(n));
  await sendFileBytes(res, file, start, length, (bytes) => {
    n += bytes;
  }).catch((error: unknown) => {
    logger.debug({ err: error }, 'edge stream ended early');
    res.destroy();
  });
}

/** Streams to the client; once headers are out, a failure can only cut the connection. */
function pipe(body: Readable, res: Response, logger: Logger): Promise<void> {
  return new Promise((resolve) => {
    const done = () => resolve();
    body.once('error', (error) => {
      logger.debug({ err: error }, 'edge stream ended early');
      res.destroy();
      done();
    });
    res.once('close', done);
    body.pipe(res);
  });
}
