export interface ByteRange {
  start: number;
  /** Inclusive, as in Content-Range. */
  end: number;
}

export type RangeResult =
  | { kind: 'full' }
  | { kind: 'partial'; range: ByteRange }
  | { kind: 'unsatisfiable' };

const SPEC = /^(\d*)-(\d*)$/;

/**
 * Parses a `Range` header against a representation of `size` bytes (RFC 9110 §14).
 * No header, another unit, or several ranges → the full body (multipart/byteranges is not offered).
 * A malformed or unsatisfiable bytes range → unsatisfiable (416).
 */
export function parseRange(header: string | undefined, size: number): RangeResult {
  if (header === undefined || header.trim() === '') return { kind: 'full' };
  const match = /^\s*bytes\s*=\s*(.+)$/i.exec(header);
  if (!match?.[1]) return header.trim().toLowerCase().startsWith('bytes') ? { kind: 'unsatisfiable' } : { kind: 'full' };
  const specs = match[1].split(',').map((s) => s.trim());
  if (specs.length > 1) return { kind: 'full' };
  const spec = SPEC.exec(specs[0] ?? '');
  if (!spec) return { kind: 'unsatisfiable' };
  const [, first = '', last = ''] = spec;
  if (first === '' && last === '') return { kind: 'unsatisfiable' };
  if (first === '') {
    // Suffix range: the last N bytes.
    const n = Number(last);
    if (n === 0 || size === 0) return { kind: 'unsatisfiable' };
    return { kind: 'partial', range: { start: Math.max(0, size - n), end: size - 1 } };
  }
  const start = Number(first);
  if (!Number.isSafeInteger(start) || start >= size) return { kind: 'unsatisfiable' };
  const end = last === '' ? size - 1 : Math.min(Number(last), size - 1);
  if (!Number.isSafeInteger(end) || end < start) return { kind: 'unsatisfiable' };
  return { kind: 'partial', range: { start, end } };
}
