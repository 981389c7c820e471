import { isUtf8 } from 'node:buffer';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { validationFailed } from '@dam/errors';

/**
 * express.json's `verify` hook: a body that is not valid text in its charset answers 400 VALIDATION_FAILED
 * (CONTRACT §16) instead of being decoded with U+FFFD in place of the bad bytes and stored that way. `body` is
 * the raw (already inflated) body; `encoding` its declared charset, `utf-8` when none is declared.
 */
export function rejectInvalidText(_req: IncomingMessage, _res: ServerResponse, body: Buffer, encoding: string): void {
  if (isValidText(body, encoding)) return;
  throw validationFailed([{ path: '(body)', message: `must be valid ${encoding.toUpperCase()}` }], `The request body is not valid ${encoding.toUpperCase()}`);
}

function isValidText(body: Buffer, encoding: string): boolean {
  const charset = encoding.toLowerCase();
  if (charset === 'utf-8' || charset === 'utf8') return isUtf8(body);
  // The other `utf-*` charsets the JSON parser admits: checked where the platform's decoder knows them.
  let decoder;
  try {
    decoder = new TextDecoder(charset, { fatal: true });
  } catch {
    return true; // a charset only the parser's own decoder knows: decoded as before
  }
  try {
    decoder.decode(body);
    return true;
  } catch {
    return false;
  }
}
