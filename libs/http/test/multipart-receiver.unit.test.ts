import type { IncomingMessage } from 'node:http';
import { PassThrough, type Readable } from 'node:stream';
import { isAppError } from '@dam/errors';
import { boundaryOf, nulInPartHeaders, RecentBytes } from '../src/multipart/part-header-nul';
import { receiveMultipart } from '../src/multipart/receiver';

const BOUNDARY = 'unit-boundary';
const head = (disposition: string, extra = '') => `--${BOUNDARY}\r\nContent-Disposition: form-data; ${disposition}\r\n${extra}\r\n`;
const end = `--${BOUNDARY}--\r\n`;

/** A request as the receiver reads it, fed `chunks` one per tick. */
function fakeRequest(chunks: Array<string | Buffer>): IncomingMessage {
  const body = new PassThrough() as PassThrough & { headers: Record<string, string>; complete: boolean };
  body.headers = { 'content-type': `multipart/form-data; boundary=${BOUNDARY}` };
  body.complete = false;
  body.once('end', () => (body.complete = true));
  let i = 0;
  const feed = () => {
    const chunk = chunks[i++];
    if (chunk === undefined) {
      body.end();
      return;
    }
    // Written regardless of back-pressure: the parser's own queue is what RecentBytes must cover.
    body.write(typeof chunk === 'string' ? Buffer.from(chunk, 'latin1') : chunk);
    setImmediate(feed);
  };
  setImmediate(feed);
  return body as unknown as IncomingMessage;
}

/** Reads a file part slowly, so the parser waits and the body queues up before it. */
async function slowDrain(stream: Readable): Promise<number> {
  let n = 0;
  for await (const c of stream) {
    n += (c as Buffer).length;
    await new Promise((r) => setTimeout(r, 1));
  }
  return n;
}

async function refusal(chunks: Array<string | Buffer>): Promise<{ code: string; details: unknown }> {
  const outcome = await receiveMultipart(fakeRequest(chunks), { onFile: (p) => slowDrain(p.stream), onField: () => undefined }).then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!isAppError(outcome)) throw new Error(`expected a refusal, got ${String(outcome)}`);
  return { code: outcome.code, details: outcome.details };
}

describe('receiveMultipart: NUL in a part header', () => {
  it.each([
    ['a field name', head('name="cu\u0000stom"') + 'x\r\n', 'field'],
    ['a file name', head('name="file"; filename="a\u0000.txt"') + 'x\r\n', 'file.filename'],
    ['the name of a file field', head('name="fi\u0000le"; filename="a.txt"') + 'x\r\n', 'field'],
    ['another header', head('name="file"; filename="a.txt"', 'Content-Type: text/pl\u0000ain\r\n') + 'x\r\n', 'part header'],
  ])('answers 400 VALIDATION_FAILED for a NUL in %s', async (_label, part, path) => {
    const refused = await refusal([head('name="ok"; filename="ok.txt"') + 'fine\r\n', part, end]);
    expect(refused).toEqual({ code: 'VALIDATION_FAILED', details: [{ path, message: 'must not contain a NUL character' }] });
  });

  it('finds it after a large file part full of NUL bytes, read slowly', async () => {
    // 2 MiB of file in 64 KiB chunks, read slowly (the parser is held back meanwhile); its NUL bytes are content.
    const file = Array.from({ length: 32 }, () => Buffer.alloc(64 * 1024, 0));
    const refused = await refusal([head('name="big"; filename="big.bin"'), ...file, `\r\n${head('name="n\u0000"')}x\r\n`, end]);
    expect(refused).toEqual({ code: 'VALIDATION_FAILED', details: [{ path: 'field', message: 'must not contain a NUL character' }] });
  });

  it('still answers MALFORMED_UPLOAD for a header refused for another reason', async () => {
    const refused = await refusal([head('name="file"; filename="a.txt"', 'Content-Type: text/pl\u007fain\r\n') + 'x\u0000y\r\n', end]);
    expect(refused.code).toBe('MALFORMED_UPLOAD');
  });

  it('accepts NUL bytes in file content', async () => {
    const received = await receiveMultipart(fakeRequest([head('name="file"; filename="a.bin"') + '\u0000\u0000\u0000\r\n', end]), {
      onFile: (p) => slowDrain(p.stream),
      onField: () => undefined,
    });
    expect(received.results).toEqual([3]);
  });
});

describe('part header helpers', () => {
  it('reads the boundary of a Content-Type', () => {
    expect(boundaryOf('multipart/form-data; boundary=abc')).toBe('abc');
    expect(boundaryOf('multipart/form-data; BOUNDARY="a b;c"; charset=utf-8')).toBe('a b;c');
    expect(boundaryOf('application/json')).toBeUndefined();
  });

  it('looks only at part headers, not at content between them', () => {
    const body = Buffer.from(`${head('name="f"; filename="a.bin"')}\u0000 not a header\r\n${head('name="g"')}ok\r\n${end}`, 'latin1');
    expect(nulInPartHeaders(body, BOUNDARY, true)).toBeUndefined();
    // The body's first delimiter has no CRLF before it; it counts only at the body's start.
    const first = Buffer.from(head('name="\u0000"'), 'latin1');
    expect(nulInPartHeaders(first, BOUNDARY, true)).toBe('field');
    expect(nulInPartHeaders(first, BOUNDARY, false)).toBeUndefined();
  });

  it('keeps the window before the bytes the parser has not processed', () => {
    let unprocessed = 0;
    const recent = new RecentBytes(() => unprocessed);
    const chunk = Buffer.alloc(8 * 1024, 1);
    for (let i = 0; i < 10; i += 1) recent.push(chunk);
    const settled = recent.snapshot();
    expect(settled.fromBodyStart).toBe(false);
    expect(settled.bytes.length).toBeGreaterThanOrEqual(16 * 1024 + 8 * 1024);
    expect(settled.bytes.length).toBeLessThan(40 * 1024);
    unprocessed = 64 * 1024;
    for (let i = 0; i < 10; i += 1) recent.push(chunk);
    expect(recent.snapshot().bytes.length).toBeGreaterThanOrEqual(16 * 1024 + 64 * 1024);
  });
});
