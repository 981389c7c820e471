import { createHash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { Request } from 'express';

/**
 * The request body a service token is bound to (claim `bh`, security review I6): without it, a token captured on
 * the wire could be sent again with another body. `bh` is the SHA-256 (base64url) of the exact bytes sent, or
 * `UNSIGNED` when the signer forwards a body it never holds (the gateway streaming a body its JSON parser did not
 * read). A verifier accepts `UNSIGNED` only for a body that reaches it unparsed: such a body exists for a route
 * only as a raw stream, which only a route that streams reads; every body a route receives parsed (JSON) is checked.
 */
export const UNSIGNED_BODY = 'UNSIGNED';

const sha256 = (bytes: string | Uint8Array): string => createHash('sha256').update(bytes).digest('base64url');
// Most internal calls (every GET) have no body: its hash once, not a hash object per call (1-2 % of a hop's CPU).
const EMPTY_BODY_HASH = sha256('');

/** `bh` of these exact body bytes (no body: the empty string). */
export const bodyHash = (bytes: string | Uint8Array): string => (bytes.length === 0 ? EMPTY_BODY_HASH : sha256(bytes));

/** The body as the verifier received it: its bytes, or a stream it does not read (`streamed`). */
export type ReceivedBody = { bytes: string | Uint8Array } | 'streamed';

/** Whether a request carries body bytes (RFC 9112 §6.3: chunked, or a length above 0). */
export function hasBody(headers: IncomingHttpHeaders): boolean {
  if (headers['transfer-encoding'] !== undefined) return true;
  const length = headers['content-length'];
  return length !== undefined && length !== '0';
}

/**
 * The body of a request as the service's guard sees it. Parsed by express.json (createHttpApp parses before any
 * guard): its JSON text again. Senders hash `JSON.stringify` of a value (internalClient, and the gateway re-sending
 * what its own parser read), and `JSON.stringify(JSON.parse(t)) === t` for any `t` that JSON.stringify made, so
 * both sides hash the same text. A body that parses to another value fails; one that differs only in spacing or
 * escapes parses to the same value, which is all the route acts on.
 */
export function receivedBody(req: Request): ReceivedBody {
  if (req.body !== undefined) return { bytes: JSON.stringify(req.body) };
  return hasBody(req.headers) ? 'streamed' : { bytes: '' };
}

/** Whether `bh` (as the token says) matches the body received; a reason when it does not. */
export function bodyMismatch(bh: unknown, received: ReceivedBody): string | undefined {
  if (typeof bh !== 'string') return 'no body binding';
  if (received === 'streamed') return bh === UNSIGNED_BODY ? undefined : 'a streamed body for a token bound to a body';
  if (bh === UNSIGNED_BODY) return 'an unbound token for a parsed body';
  return bh === bodyHash(received.bytes) ? undefined : 'issued for another body';
}
