export interface ByteRange {
  start: number;
  /** Inclusive, as in Content-Range. */
  end: number;
}

export type RangeResult = { kind: 'full' } | { kind: 'partial'; range: ByteRange } | { kind: 'unsatisfiable' };

const SPEC = /^(\d*)-(\d*)$/;

/**
 * Parses a `Range` header against a representation of `size` bytes (RFC 9110 §14).
 * No header, another unit, several ranges (multipart/byteranges is not offered) or a syntactically invalid
 * bytes range (`bytes=abc`, `bytes=5-2`) → the full body: a server ignores what it cannot parse (§14.2).
 * A valid bytes range that selects nothing (first byte past the end, a zero-length suffix, an empty
 * representation) → unsatisfiable (416).
 */
export function parseRange(header: string | undefined, size: number): RangeResult {
  if (header === undefined || header.trim() === '') return { kind: 'full' };
  const match = /^\s*bytes\s*=\s*(.+)$/i.exec(header);
  if (!match?.[1]) return { kind: 'full' };
  const specs = match[1].split(',').map((s) => s.trim());
  if (specs.length > 1) return { kind: 'full' };
  const spec = SPEC.exec(specs[0] ?? '');
  if (!spec) return { kind: 'full' };
  const [, first = '', last = ''] = spec;
  if (first === '' && last === '') return { kind: 'full' };
  if (first === '') {
    // Suffix range: the last N bytes.
    const n = Number(last);
    if (!Number.isSafeInteger(n)) return { kind: 'full' };
    if (n === 0 || size === 0) return { kind: 'unsatisfiable' };
    return { kind: 'partial', range: { start: Math.max(0, size - n), end: size - 1 } };
  }
  const start = Number(first);
  const lastPos = last === '' ? undefined : Number(last);
  if (!Number.isSafeInteger(start) || (lastPos !== undefined && (!Number.isSafeInteger(lastPos) || lastPos < start))) return { kind: 'full' };
  if (start >= size) return { kind: 'unsatisfiable' };
  return { kind: 'partial', range: { start, end: lastPos === undefined ? size - 1 : Math.min(lastPos, size - 1) } };
}

/**
 * `If-Range` (RFC 9110 §13.1.5): the Range applies only when the validator still matches; otherwise the whole
 * current representation is sent. Entity tags compare strongly (a weak tag never matches); we send no
 * Last-Modified, so a date never matches either.
 */
export function rangeUnlessChanged(rangeHeader: string | undefined, ifRange: string | undefined, etag: string): string | undefined {
  if (rangeHeader === undefined || ifRange === undefined) return rangeHeader;
  return ifRange.trim() === etag && !etag.startsWith('W/') ? rangeHeader : undefined;
}
