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
