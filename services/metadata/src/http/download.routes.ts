import { pipeline } from 'node:stream/promises';
import type { Readable } from 'node:stream';
import { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import { principalOf } from '@dam/auth-tokens';
import { badRequest, notFound, rangeNotSatisfiable } from '@dam/errors';
import { parseRange, parsed, rangeUnlessChanged, safeDisposition, validate } from '@dam/http';
import type { Logger } from '@dam/logging';
import { isNotFoundError, ObjectNotFoundError, type Storage } from '@dam/storage';
import { conversionNotFound } from '../domain/asset.errors';
import type { AssetReader } from '../domain/ports';
import { resolveDownload } from '../domain/read-asset.use-case';
import { assetIdParam } from './asset-data.routes';
import { contentDisposition } from './content-disposition';

const contentMissing = () => notFound('CONTENT_NOT_FOUND', 'The stored content of this asset is missing');

const etagMatches = (header: string | undefined, etag: string): boolean =>
  header !== undefined && header.split(',').some((t) => t.trim().replace(/^W\//, '') === etag || t.trim() === '*');

/** Endpoint 5 + CONTRACT §4: streams the original or one single-file conversion from S3, with Range. */
export function downloadRoutes(reader: AssetReader, storage: Storage, logger: Logger): Router {
  const router = Router();
  const schemas = {
    params: z.object({ id: assetIdParam, key: z.string().min(1).max(64) }),
    query: z.object({ delivery: z.enum(['download', 'display']).default('download') }),
  };
  const send = async (req: Request, res: Response, params: { id: string; key: string }, delivery: 'download' | 'display') => {
    const target = await resolveDownload(reader, principalOf(res), params.id, params.key);
    let { size, etag } = target;
    if (size === undefined || etag === undefined) {
      const stat = await storage.stat(target.objectKey);
      if (!stat) throw params.key === 'original' ? contentMissing() : conversionNotFound(params.key);
      size = stat.size;
      etag = stat.etag;
    }
    const quoted = `"${etag}"`;
    // HTML, XML, SVG and scripts are always attachments, with a sandboxing CSP (they would run on our origin).
    const disposition = safeDisposition(res, target.contentType, delivery === 'display' ? 'inline' : 'attachment');
    res.set({
      'Content-Type': target.contentType,
      ETag: quoted,
      'Accept-Ranges': 'bytes',
      'Content-Disposition': contentDisposition(disposition, target.fileName),
      'Cache-Control': 'private, no-cache',
    });
    if (etagMatches(req.header('if-none-match'), quoted)) {
      res.status(304).end();
      return;
    }
    const range = parseRange(rangeUnlessChanged(req.header('range'), req.header('if-range'), quoted), size);
    if (range.kind === 'unsatisfiable') throw rangeNotSatisfiable(size);

    let body: Readable;
    try {
      if (range.kind === 'partial') {
        body = await storage.getRange(target.objectKey, range.range.start, range.range.end);
        res.status(206).set({
          'Content-Range': `bytes ${range.range.start}-${range.range.end}/${size}`,
          'Content-Length': String(range.range.end - range.range.start + 1),
        });
      } else {
        // An empty object has no range to ask for: getObject of 0 bytes is fine.
        body = await storage.getStream(target.objectKey);
        res.status(200).set('Content-Length', String(size));
      }
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

  router.get('/api/v1/assets/:id/content/:key/download', validate(schemas), async (req, res) => {
    const { params, query } = parsed(schemas, req, res);
    await send(req, res, params, query.delivery);
  });

  // Endpoint 15, Get Conversion: the bytes of one conversion (or `original`), shown inline unless asked
  // otherwise. Multi-file conversions are served below their key instead (CONTRACT §5).
  const conversion = {
    params: z.object({ id: assetIdParam, key: z.string().min(1).max(64) }),
    query: z.object({ delivery: z.enum(['download', 'display']).default('display') }),
  };
  router.get('/api/v1/assets/:id/conversions/:key', validate(conversion), async (req, res) => {
    const { params, query } = parsed(conversion, req, res);
    if (MULTI_FILE_KEYS.has(params.key)) {
      throw badRequest('MULTI_FILE_CONVERSION', `"${params.key}" is a multi-file conversion: read it below /content/${params.key}/`);
    }
    await send(req, res, params, query.delivery);
  });
  return router;
}

/** Conversions made of many files (tiles, playlists): Get Conversion cannot return them as one body. */
const MULTI_FILE_KEYS: ReadonlySet<string> = new Set(['deepzoom', 'hls-video']);
