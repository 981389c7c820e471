import { pipeline } from 'node:stream/promises';
import type { Readable } from 'node:stream';
import { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import { principalOf } from '@dam/auth-tokens';
import { badRequest, notFound } from '@dam/errors';
import type { TransformFormat } from '@dam/internal-api';
import { ACCEL, parsed, pathId, planContent, validate } from '@dam/http';
import type { Logger } from '@dam/logging';
import { contentTypeOfFile, isNotFoundError, ObjectNotFoundError, type Storage } from '@dam/storage';
import { conversionNotFound } from '../domain/asset.errors';
import type { AssetReader, TransformCall } from '../domain/ports';
import { storedObjectsOf } from '../domain/asset';
import { findReadableAsset, resolveDownload, type DownloadTarget } from '../use-cases/read-asset.use-case';
import { transformVariant } from '../use-cases/transform-variant.use-case';
import { assetIdParam } from './asset-data.routes';

const contentMissing = () => notFound('CONTENT_NOT_FOUND', 'The stored content of this asset is missing');

/** Endpoint 5 + CONTRACT §4: streams the original or one single-file conversion from S3, with Range. */
export function downloadRoutes(reader: AssetReader, storage: Storage, logger: Logger, transforms?: TransformCall): Router {
  const router = Router();
  const send = async (req: Request, res: Response, params: { id: string; key: string }, delivery: 'download' | 'display', resolved?: DownloadTarget) => {
    const target = resolved ?? (await resolveDownload(reader, principalOf(res), params.id, params.key));
    let { size, etag } = target;
    if (size === undefined || etag === undefined) {
      const stat = await storage.stat(target.objectKey);
      if (!stat) throw params.key === 'original' ? contentMissing() : conversionNotFound(params.key);
      size = stat.size;
      etag = stat.etag;
    }
    const plan = planContent(req, res, { contentType: target.contentType, etag, size, fileName: target.fileName, delivery });
    if (plan.kind === 'not-modified') {
      res.end();
      return;
    }
    // The gateway streams the bytes itself from a presigned URL: the caller is checked, the headers are ours.
    if (req.method !== 'HEAD' && plan.length > 0 && req.header(ACCEL.request) === 's3') {
      res.set({ [ACCEL.redirect]: await storage.presignGet(target.objectKey, 300), [ACCEL.length]: String(plan.length) });
      res.end();
      return;
    }
    res.set('Content-Length', String(plan.length));
    let body: Readable;
    try {
      // An empty object has no range to ask for: getObject of 0 bytes is fine.
      body = plan.partial ? await storage.getRange(target.objectKey, plan.start, plan.end) : await storage.getStream(target.objectKey);
    } catch (error) {
      if (error instanceof ObjectNotFoundError || isNotFoundError(error)) throw contentMissing();
      throw error;
    }
    if (req.method === 'HEAD') {
      body.destroy();
      res.end();
      return;
    }
    try {
      await pipeline(body, res);
    } catch (error) {
      // Headers are gone: a client that went away or a storage hiccup can only cut the connection.
      logger.debug({ err: error, asset_id: params.id }, 'download stream ended early');
      res.destroy();
    }
  };

  router.get('/api/v1/assets/:id/content/:key/download', validate(downloadSchemas), async (req, res) => {
    const { params, query } = parsed(downloadSchemas, req, res);
    await send(req, res, params, query.delivery);
  });

  // CONTRACT §5 multi-file conversions, served below their key: `deepzoom/image.dzi` and its tiles
  // (`image_files/<level>/<col>_<row>.jpeg`), `hls-video/master.m3u8` and its renditions and segments, and
  // `storyboard/storyboard.vtt` next to the sprite sheet the key itself downloads.
  router.get('/api/v1/assets/:id/content/:key/*path', async (req, res) => {
    const id = assetIdParam.safeParse(req.params.id);
    const key = String(req.params.key);
    const segments = (req.params as unknown as { path: string[] }).path;
    if (!id.success || !FOLDER_KEYS.has(key)) throw notFound('CONTENT_NOT_FOUND', 'No such content');
    if (segments.length === 0 || segments.length > 6 || !segments.every((s) => /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/.test(s))) {
      throw badRequest('VALIDATION_FAILED', "The file path is not one of this conversion's files");
    }
    const asset = await findReadableAsset(reader, principalOf(res), id.data);
    const conversion = Object.hasOwn(asset.conversions, key) ? asset.conversions[key] : undefined;
    if (!conversion) throw conversionNotFound(key);
    const file = segments.join('/');
    const target: DownloadTarget = {
      groupId: asset.groupId,
      assetId: asset.id,
      assetChecksum: asset.checksum,
      objectKey: `${storedObjectsOf(conversion)}${file}`,
      contentType: contentTypeOfFile(file),
      fileName: segments[segments.length - 1] ?? file,
    };
    await send(req, res, { id: asset.id, key }, 'display', target);
  });

  // Endpoint 15, Get Conversion: the bytes of one conversion (or `original`), shown inline unless asked
  // otherwise. Multi-file conversions are served below their key instead (CONTRACT §5).
  router.get('/api/v1/assets/:id/conversions/:key', validate(getConversionSchemas), async (req, res) => {
    const { params, query } = parsed(getConversionSchemas, req, res);
    if (MULTI_FILE_KEYS.has(params.key)) {
      throw badRequest('MULTI_FILE_CONVERSION', `"${params.key}" is a multi-file conversion: read it below /content/${params.key}/`);
    }
    const { delivery, ...wanted } = query;
    if (Object.values(wanted).every((v) => v === undefined)) {
      await send(req, res, params, delivery);
      return;
    }
    // On-demand transform (CONTRACT §5): made once into the cache, then served like any conversion.
    const source = await resolveDownload(reader, principalOf(res), params.id, params.key);
    if (wanted.format === 'auto') res.vary('Accept');
    const format = resolveFormat(wanted.format, req.header('accept'));
    const variant = await transformVariant({ storage, ...(transforms ? { transforms } : {}) }, source, params.key, {
      ...(format !== undefined ? { format } : {}),
      ...(wanted.w !== undefined ? { w: wanted.w } : {}),
      ...(wanted.h !== undefined ? { h: wanted.h } : {}),
      ...(wanted.fit !== undefined ? { fit: wanted.fit } : {}),
      ...(wanted.q !== undefined ? { q: wanted.q } : {}),
    });
    await send(req, res, params, delivery, variant);
  });
  return router;
}

/** `w`, `h` (1-8192), `fit`, `format` (with `auto`), `q` (1-100): an invalid value is a 400; other parameters (a cache buster) are ignored. */
const transformQuery = z.object({
  w: z.coerce.number().int().min(1).max(8192).optional(),
  h: z.coerce.number().int().min(1).max(8192).optional(),
  fit: z.enum(['cover', 'contain', 'inside', 'fill']).optional(),
  format: z.enum(['jpeg', 'png', 'webp', 'avif', 'auto']).optional(),
  q: z.coerce.number().int().min(1).max(100).optional(),
});

/** A conversion key of no conversion's form names none: 404 like an unknown one (CONTRACT §16). */
const conversionKey = pathId(z.string().min(1).max(64), () => notFound('CONVERSION_NOT_FOUND', 'The asset has no conversion of that name'));

/** Request schemas as validated (exported for the OpenAPI agreement test in services/gateway/test). */
export const downloadSchemas = {
  params: z.object({ id: assetIdParam, key: conversionKey }),
  query: z.object({ delivery: z.enum(['download', 'display']).default('download') }),
};
export const getConversionSchemas = {
  params: z.object({ id: assetIdParam, key: conversionKey }),
  query: z.object({ delivery: z.enum(['download', 'display']).default('display'), ...transformQuery.shape }),
};

/** Get Conversion's `auto` follows `Accept`: AVIF, then WebP, else JPEG (CONTRACT §5). No format: the source's own where it can (the use case). */
function resolveFormat(asked: string | undefined, accept: string | undefined): TransformFormat | undefined {
  if (asked !== 'auto') return asked as TransformFormat | undefined;
  const a = (accept ?? '').toLowerCase();
  if (a.includes('image/avif')) return 'avif';
  if (a.includes('image/webp')) return 'webp';
  return 'jpeg';
}

/** Conversions made of many files (tiles, playlists): Get Conversion cannot return them as one body. */
const MULTI_FILE_KEYS: ReadonlySet<string> = new Set(['deepzoom', 'hls-video']);
/** Conversions whose files are read below their key. */
const FOLDER_KEYS: ReadonlySet<string> = new Set([...MULTI_FILE_KEYS, 'storyboard']);
