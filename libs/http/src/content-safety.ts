import type { Response } from 'express';

/**
 * Types a browser would run or render as a document with script: HTML, XML (any `+xml`, SVG included),
 * JavaScript. A DAM serves whatever its users uploaded, so such content is never rendered on our origin.
 */
export function isActiveContentType(contentType: string | undefined): boolean {
  const type = (contentType ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  if (type === '') return true; // unknown: a browser would sniff it
  if (type === 'text/html' || type === 'application/xhtml+xml' || type === 'text/xml' || type === 'application/xml') return true;
  if (type.endsWith('+xml') || type.endsWith('/xml')) return true;
  if (/^(text|application)\/(x-)?(javascript|ecmascript)$/.test(type) || type === 'text/jscript' || type === 'application/x-shockwave-flash') return true;
  return false;
}

export const ACTIVE_CONTENT_CSP = "default-src 'none'; sandbox";

/**
 * The disposition a content response may use: what the client asked for, except that active types are always
 * attachments. Sets nosniff, and for active types a CSP that keeps them inert even if opened.
 */
export function safeDisposition(res: Response, contentType: string | undefined, wanted: 'inline' | 'attachment'): 'inline' | 'attachment' {
  res.setHeader('X-Content-Type-Options', 'nosniff');
  if (!isActiveContentType(contentType)) return wanted;
  res.setHeader('Content-Security-Policy', ACTIVE_CONTENT_CSP);
  return 'attachment';
}

/**
 * `attachment`/`inline` with the file name. Non-ASCII names get an ASCII fallback plus RFC 5987 `filename*`,
 * which every current browser prefers; quotes and backslashes cannot break out of the quoted string.
 */
export function contentDisposition(kind: 'attachment' | 'inline', fileName: string): string {
  const fallback = fileName.replace(/[^\x20-\x7e]|["\\]/g, '_');
  if (/^[\x20-\x7e]*$/.test(fileName) && fallback === fileName) return `${kind}; filename="${fileName}"`;
  const encoded = encodeURIComponent(fileName).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `${kind}; filename="${fallback}"; filename*=UTF-8''${encoded}`;
}
