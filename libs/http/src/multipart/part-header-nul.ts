import { validationFailed, type AppError } from '@dam/errors';

/**
 * busboy refuses a raw NUL in a part header (field name, file name) as "Malformed part header", which names
 * neither the cause nor the field. These helpers keep the last bytes the parser was given so that, when it
 * refuses a header, the receiver can tell whether a NUL was why and answer as for a NUL anywhere else:
 * 400 VALIDATION_FAILED naming the field.
 */

// busboy caps a part header at 16 KiB; a boundary has at most 70 characters (RFC 2046), plus "\r\n--".
const HEADER_WINDOW = 16 * 1024 + 128;
const NUL_MESSAGE = 'must not contain a NUL character';

/**
 * The tail of a request body: always the bytes the parser has not processed yet plus HEADER_WINDOW before
 * them, so whatever part header it is reading when it fails is inside. References the body's own chunks
 * (no copy); a few of them per upload at most.
 */
export class RecentBytes {
  private readonly chunks: Buffer[] = [];
  private total = 0;
  private trimmed = false;

  /** `unprocessed`: bytes handed to the parser that it has not consumed yet (its `writableLength`). */
  constructor(private readonly unprocessed: () => number) {}

  /** Call with every body chunk before the parser gets it. */
  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.total += chunk.length;
    const keep = HEADER_WINDOW + this.unprocessed() + chunk.length;
    while (this.chunks.length > 1) {
      const first = this.chunks[0];
      if (!first || this.total - first.length < keep) break;
      this.chunks.shift();
      this.total -= first.length;
      this.trimmed = true;
    }
  }

  /** The kept bytes, and whether they begin at the body's first byte. */
  snapshot(): { bytes: Buffer; fromBodyStart: boolean } {
    return { bytes: Buffer.concat(this.chunks, this.total), fromBodyStart: !this.trimmed };
  }
}

/** The boundary of a multipart Content-Type, or undefined. */
export function boundaryOf(contentType: string | undefined): string | undefined {
  const match = /;\s*boundary\s*=\s*(?:"([^"]*)"|([^;\s]+))/i.exec(contentType ?? '');
  return match ? (match[1] ?? match[2]) : undefined;
}

/** The validation path of the first NUL in any part header within `bytes`, or undefined when none has one. */
export function nulInPartHeaders(bytes: Buffer, boundary: string, fromBodyStart: boolean): string | undefined {
  const delimiter = Buffer.from(`\r\n--${boundary}`, 'latin1');
  // The first delimiter of a body may come without the CRLF before it.
  let at = fromBodyStart && bytes.subarray(0, delimiter.length - 2).equals(delimiter.subarray(2)) ? -2 : bytes.indexOf(delimiter);
  while (at !== -1 && at < bytes.length) {
    const start = at + delimiter.length;
    const next = bytes.indexOf(delimiter, start);
    const blank = bytes.indexOf('\r\n\r\n', start, 'latin1');
    const end = Math.min(blank === -1 ? bytes.length : blank, next === -1 ? bytes.length : next);
    const nul = bytes.subarray(start, end).indexOf(0);
    if (nul !== -1) return pathOf(bytes.subarray(start, start + nul).toString('latin1'));
    at = next;
  }
  return undefined;
}

/** Names what the header text before a NUL was saying: the field name, a file name, or another header. */
function pathOf(before: string): string {
  const line = before.slice(before.lastIndexOf('\n') + 1);
  const colon = line.indexOf(':');
  if (colon === -1 || line.slice(0, colon).trim().toLowerCase() !== 'content-disposition') return 'part header';
  const params = [...line.slice(colon + 1).matchAll(/(filename\*?|name)\s*=/gi)];
  const last = params[params.length - 1];
  if (!last || last[1]?.toLowerCase() === 'name') return 'field';
  const field = /;\s*name\s*=\s*"([^"]*)"/i.exec(line)?.[1];
  return field ? `${field}.filename` : 'filename';
}

/** The 400 for a part header holding a NUL, or undefined when the refused header had none. */
export function partHeaderNulError(recent: RecentBytes, boundary: string | undefined): AppError | undefined {
  if (!boundary) return undefined;
  const { bytes, fromBodyStart } = recent.snapshot();
  const path = nulInPartHeaders(bytes, boundary, fromBodyStart);
  return path === undefined ? undefined : validationFailed([{ path, message: NUL_MESSAGE }]);
}
