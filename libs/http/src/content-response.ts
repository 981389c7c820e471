import type { Request, Response } from 'express';
import { rangeNotSatisfiable } from '@dam/errors';
import { contentDisposition, safeDisposition } from './content-safety';
import { parseRange, rangeUnlessChanged } from './range';

export interface StoredContent {
  contentType: string;
  /** The content's strong validator, unquoted (an MD5 hex digest, an S3 ETag). */
  etag: string;
  size: number;
  fileName: string;
  delivery: 'display' | 'download';
  /** Who may keep the answer and how long (`{cdn}`: `public, max-age=N`); default `private, no-cache`. */
  cacheControl?: string;
  /** Sent as Last-Modified and compared with If-Modified-Since (when no If-None-Match is sent). */
  lastModified?: Date;
}

/** What to send after the headers: nothing (304), or the bytes `start..end` (`length` of them; 0 for an empty file). */
export type ContentPlan = { kind: 'not-modified' } | { kind: 'bytes'; start: number; end: number; length: number; partial: boolean };

/** Last-Modified has whole seconds: a date at or after it (in that precision) means unchanged. */
const notModifiedSince = (header: string | undefined, lastModified: Date | undefined): boolean => {
  if (header === undefined || lastModified === undefined) return false;
  const since = Date.parse(header);
  return Number.isFinite(since) && Math.floor(lastModified.getTime() / 1000) <= Math.floor(since / 1000);
};

const etagMatches = (header: string | undefined, etag: string): boolean =>
  header !== undefined && header.split(',').some((t) => t.trim().replace(/^W\//, '') === etag || t.trim() === '*');

/**
 * The headers of a content answer (type, ETag, ranges, disposition, caching) and its status: 304 for a matching
 * If-None-Match (or, without one, an If-Modified-Since not older than Last-Modified), 206 with Content-Range for a
 * satisfiable Range (If-Range honoured), 416 thrown for an unsatisfiable one, else 200. Active types (HTML, XML, SVG, scripts) are always attachments with a sandboxing CSP.
 * Content-Length is left to the caller (an internal redirect answers with an empty body).
 */
export function planContent(req: Request, res: Response, c: StoredContent): ContentPlan {
  const quoted = `"${c.etag}"`;
  const disposition = safeDisposition(res, c.contentType, c.delivery === 'display' ? 'inline' : 'attachment');
  res.set({
    'Content-Type': c.contentType,
    ETag: quoted,
    'Accept-Ranges': 'bytes',
    'Content-Disposition': contentDisposition(disposition, c.fileName),
    'Cache-Control': c.cacheControl ?? 'private, no-cache',
  });
  if (c.lastModified) res.set('Last-Modified', c.lastModified.toUTCString());
  const ifNoneMatch = req.header('if-none-match');
  // RFC 9110 §13.2.2: If-Modified-Since counts only without If-None-Match.
  if (ifNoneMatch !== undefined ? etagMatches(ifNoneMatch, quoted) : notModifiedSince(req.header('if-modified-since'), c.lastModified)) {
    res.status(304);
    return { kind: 'not-modified' };
  }
  const range = parseRange(rangeUnlessChanged(req.header('range'), req.header('if-range'), quoted), c.size);
  if (range.kind === 'unsatisfiable') throw rangeNotSatisfiable(c.size);
  if (range.kind === 'partial') {
    const { start, end } = range.range;
    res.status(206).set('Content-Range', `bytes ${start}-${end}/${c.size}`);
    return { kind: 'bytes', start, end, length: end - start + 1, partial: true };
  }
  res.status(200);
  return { kind: 'bytes', start: 0, end: Math.max(0, c.size - 1), length: c.size, partial: false };
}
