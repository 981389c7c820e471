import { createReadStream } from 'node:fs';
import type { Readable } from 'node:stream';
import { Router, type Request, type Response } from 'express';
import { forbidden, notFound, payloadTooLarge } from '@dam/errors';
import type { DeliveryTarget } from '@dam/internal-api';
import { planContent, safeDisposition } from '@dam/http';
import type { Logger } from '@dam/logging';
import { contentTypeOfFile, isNotFoundError, ObjectNotFoundError, type Storage } from '@dam/storage';
import { ByteCache, type CacheEntry } from '../adapters/byte-cache';
import { deliveryError, principalOfOwner, type SuiteClients } from '../adapters/suite.clients';
import type { UsageMeter } from '@dam/events';
import { accessSecret, cdnUrl, verifyLink, type LinkParams } from '../domain/link-signature';
import { rewritePlaylist } from '../domain/playlist';

export interface EdgeDeps {
  clients: SuiteClients;
  storage: Storage;
  cache: ByteCache;
  usage: UsageMeter;
  logger: Logger;
  cdnBase: string;
  /** Every key that verifies links (the first also signs playlist entries). */
  signingKeys: readonly Buffer[];
  now?: () => number;
}

const LINK_QUERY = ['key', 'expiry', 'delivery', 'accessId', 'signature'] as const;
const ASSET_ID = /^[A-Za-z0-9]{1,64}$/;
const FILE_SEGMENT = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;
/** Playlists are rewritten in memory: a larger one is not a playlist this suite made. */
const PLAYLIST_MAX_BYTES = 1024 * 1024;

const invalidLink = (why: string) => forbidden(`The link is not valid: ${why}`, 'LINK_INVALID');

/** The five parameters of a link, each once; anything else (a missing, repeated or added parameter) is refused. */
export function linkOf(query: Request['query']): { params: LinkParams; signature: string } {
  const names = Object.keys(query);
  for (const name of names) if (!(LINK_QUERY as readonly string[]).includes(name)) throw invalidLink(`unknown parameter ${name}`);
  const get = (name: (typeof LINK_QUERY)[number]): string => {
    const v = query[name];
    if (typeof v !== 'string' || v === '') throw invalidLink(`${name} is missing or repeated`);
    return v;
  };
  const expiry = get('expiry');
  const delivery = get('delivery');
  // Written as signed, without leading zeros: `expiry=0<n>` verified as well (it is signed as a number), and several
  // URLs naming one link escape a cache's key and a purge by URL (security review I1).
  if (!/^(0|[1-9][0-9]{0,11})$/.test(expiry)) throw invalidLink('expiry is not a time in its canonical form');
  if (delivery !== 'display' && delivery !== 'download') throw invalidLink('delivery is neither display nor download');
  return { params: { key: get('key'), expiry: Number(expiry), delivery, accessId: get('accessId') }, signature: get('signature') };
}

/** Where the edge's routes are (under `{cdn}`). */
export const EDGE_PREFIX = '/api/v1/files/content';

export function cors(res: Response): void {
  // A signed link is its own credential: any page may embed or fetch it (players and viewers fetch by script).
  res.setHeader('Access-Control-Allow-Origin', '*');
  res.setHeader('Access-Control-Expose-Headers', 'Content-Length, Content-Range, Accept-Ranges, ETag, X-Cache, Retry-After');
}

/**
 * `{cdn}/api/v1/files/content/<asset_id>[/<file>]?key&expiry&delivery&accessId&signature`: checks the signature
 * (any active key), the expiry, and that the accessID's user is still active and may still read the asset, then
 * serves the bytes from the byte cache or the object store, with Range. Files of multi-file conversions are named
 * after the asset id; playlists come back with every entry signed.
 */
export function edgeRoutes(deps: EdgeDeps): Router {
  const router = Router();
  const nowSeconds = () => Math.floor((deps.now?.() ?? Date.now()) / 1000);
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
    const id = String(req.params.id);
    const segments = (req.params as unknown as { file?: string[] }).file ?? [];
    if (!ASSET_ID.test(id) || segments.length > 6 || !segments.every((s) => FILE_SEGMENT.test(s))) {
      throw notFound('CONTENT_NOT_FOUND', 'No such content');
    }
    const { params, signature } = linkOf(req.query);
    if (!verifyLink(deps.signingKeys.map((k) => accessSecret(k, params.accessId)), id, params, signature)) {
      throw forbidden('The link signature does not match', 'SIGNATURE_INVALID');
    }
    if (params.expiry < nowSeconds()) throw forbidden('The link has expired', 'LINK_EXPIRED');
    const owner = await deps.clients.accessOwner(params.accessId);
    if (!owner || !owner.active) throw forbidden('The link was revoked', 'ACCESS_REVOKED');
    const [item] = await deps.clients.delivery(principalOfOwner(owner), [id], params.key);
    if (!item) throw notFound('ASSET_NOT_FOUND', 'The asset does not exist');
    if ('error' in item) throw deliveryError(item.error);
    const target = item.target;
    let file: { objectKey: string; contentType: string; name: string; relative?: string };
    if (segments.length > 0) {
      if (!target.folder) throw notFound('CONTENT_NOT_FOUND', `"${params.key}" is a single file`);
      const relative = segments.join('/');
      file = { objectKey: `${target.folder}${relative}`, contentType: contentTypeOfFile(relative), name: segments[segments.length - 1] as string, relative };
    } else if (target.folder) {
      const relative = target.object_key.slice(target.folder.length);
      file = { objectKey: target.object_key, contentType: target.content_type, name: target.file_name, relative };
    } else {
      file = { objectKey: target.object_key, contentType: target.content_type, name: target.file_name };
    }
    const count = (n: number) => deps.usage.add(owner.group_id, owner.user_id, n);

    if (file.relative?.endsWith('.m3u8')) {
      const text = await readSmall(deps.storage, file.objectKey);
      const signed = (f: string) => cdnUrl(deps.cdnBase, id, params, signature, f);
      const body = Buffer.from(rewritePlaylist(text, file.relative, signed));
      res.status(200).set({ 'Content-Type': file.contentType, 'Content-Length': String(body.length), 'Cache-Control': 'private, no-cache', 'X-Cache': 'BYPASS' });
      safeDisposition(res, file.contentType, 'inline');
      if (req.method === 'HEAD') return void res.end();
      res.end(body);
      count(body.length);
      return;
    }
    await sendObject(req, res, deps, { target, ...file, delivery: params.delivery }, count);
  });

  return router;
}

async function readSmall(storage: Storage, objectKey: string): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of await storage.getStream(objectKey)) {
      size += (chunk as Buffer).length;
      if (size > PLAYLIST_MAX_BYTES) throw payloadTooLarge('The playlist is too large');
      chunks.push(chunk as Buffer);
    }
  } catch (error) {
    if (error instanceof ObjectNotFoundError || isNotFoundError(error)) throw notFound('CONTENT_NOT_FOUND', 'The stored content is missing');
    throw error;
  }
  return Buffer.concat(chunks).toString('utf8');
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

interface ServedFile {
  target: DeliveryTarget;
  objectKey: string;
  contentType: string;
  name: string;
  relative?: string;
  delivery: 'display' | 'download';
}

async function sendObject(req: Request, res: Response, deps: EdgeDeps, f: ServedFile, count: (n: number) => void): Promise<void> {
  // The record knows an original's size and MD5; any other file is asked of the object store.
  let size = f.relative === undefined ? f.target.size : undefined;
  let etag = f.relative === undefined ? f.target.etag : undefined;
  if (size === undefined || etag === undefined) {
    const stat = await deps.storage.stat(f.objectKey);
    if (!stat) throw notFound('CONTENT_NOT_FOUND', 'The stored content is missing');
    size = stat.size;
    etag = stat.etag;
  }
  const plan = planContent(req, res, { contentType: f.contentType, etag, size, fileName: f.name, delivery: f.delivery });
  if (plan.kind === 'not-modified') {
    res.end();
    return;
  }
  const { start, end, length } = plan;
  res.set('Content-Length', String(length));

  const key = ByteCache.keyOf(f.objectKey, etag);
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
    return pipe(counted(createReadStream(stored.file, { start, end: Math.max(start, end), highWaterMark: 1024 * 1024 }), res, count), res, deps.logger);
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
    const stored = await deps.cache.fillFrom(entry, () => deps.storage.getStream(f.objectKey), (body) => {
      streamed = pipe(counted(body, res, count), res, deps.logger);
    });
    if (streamed) return await streamed;
    if (stored) return await fromFile(stored);
    // The fill it joined failed: read the object itself.
    await pipe(counted(await deps.storage.getStream(f.objectKey), res, count), res, deps.logger);
  } catch (error) {
    if (error instanceof ObjectNotFoundError || isNotFoundError(error)) throw notFound('CONTENT_NOT_FOUND', 'The stored content is missing');
    throw error;
  }
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

