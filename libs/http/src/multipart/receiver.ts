import type { IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import busboy from 'busboy';
import { badRequest, requestTimeout, type AppError } from '@dam/errors';
import { rejectNul } from '../nul';

/** The answers of a multipart body that cannot be read (400) or stopped arriving (408). */
export const notMultipart = (): AppError => badRequest('NOT_MULTIPART', 'The body must be multipart/form-data');
export const malformedUpload = (why: string): AppError => badRequest('MALFORMED_UPLOAD', `The multipart body is malformed: ${why}`);
export const uploadIdle = (ms: number): AppError =>
  requestTimeout(`No part of the upload arrived for ${Math.round(ms / 1000)} s: the upload was abandoned`, 'UPLOAD_IDLE_TIMEOUT');
import { boundaryOf, partHeaderNulError, RecentBytes } from './part-header-nul';

/**
 * Calls `onIdle` (once) when no byte of `req`'s body arrived for `idleMs` while we were ready to read: time spent
 * paused by back-pressure (the store slower than the client) or with bytes waiting for us is not the client's. Off
 * when `idleMs` is 0; stops at the body's end, when the request closes or when the returned function is called.
 */
export function watchIdle(req: Readable, idleMs: number, onIdle: (error: AppError) => void): () => void {
  if (idleMs <= 0) return () => undefined;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const arm = () => {
    if (stopped) return;
    clearTimeout(timer);
    timer = setTimeout(() => {
      if (stopped) return;
      if (req.readableFlowing === false || req.readableLength > 0) arm();
      else {
        stop();
        onIdle(uploadIdle(idleMs));
      }
    }, idleMs);
    timer.unref();
  };
  const stop = () => {
    stopped = true;
    clearTimeout(timer);
    req.off('data', arm);
    req.off('end', stop);
    req.off('close', stop);
  };
  arm();
  // A 'data' listener starts the flow: callers watch a body in the same tick as its reader starts.
  req.on('data', arm);
  req.once('end', stop);
  req.once('close', stop);
  return stop;
}

export interface FilePart {
  field: string;
  /** The client's file name (the field name when the part has none). */
  name: string;
  stream: Readable;
}

export interface ReceiveOptions<T> {
  /** Called for each file part as it arrives; must consume the stream (busboy waits for it). */
  onFile(part: FilePart): Promise<T>;
  /** Called for each text field as it arrives; throwing fails the request at once. */
  onField(name: string, value: string): void;
  /**
   * No byte of the body for this long, while we were ready to read, fails the request (a stalled client
   * must not hold memory and an S3 multipart upload forever). Off when 0 or absent.
   */
  idleTimeoutMs?: number;
}

export interface Received<T> {
  results: T[];
}

/**
 * Parses a multipart body as a stream. Resolves once the body ended and every file handler finished; on the
 * first failure (malformed body, client abort, a handler error) rejects after every started handler has
 * settled, so the caller can clean up everything they stored.
 */
export function receiveMultipart<T>(req: IncomingMessage, options: ReceiveOptions<T>): Promise<Received<T>> {
  let parser: busboy.Busboy;
  try {
    parser = busboy({
      headers: req.headers,
      defParamCharset: 'utf8',
      limits: { fields: 50, fieldSize: 64 * 1024, parts: 1000, headerPairs: 200 },
    });
  } catch {
    return Promise.reject(notMultipart());
  }

  return new Promise((resolve, reject) => {
    const tasks: Array<Promise<T>> = [];
    const active = new Set<Readable>();
    let failure: unknown;
    let settled = false;

    const finish = () => {
      if (settled) return;
      settled = true;
      void Promise.allSettled(tasks).then((outcomes) => {
        const failed = failure ?? outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected')?.reason;
        if (failed !== undefined) reject(failed);
        else resolve({ results: outcomes.map((o) => (o as PromiseFulfilledResult<T>).value) });
      });
    };

    let stopIdle = (): void => undefined;
    const fail = (error: unknown) => {
      if (failure !== undefined) return;
      failure = error;
      stopIdle();
      // Stop parsing and unblock every handler still reading, so they end and settle.
      req.unpipe(parser);
      for (const stream of active) stream.destroy(error instanceof Error ? error : new Error(String(error)));
      finish();
    };

    stopIdle = watchIdle(req, options.idleTimeoutMs ?? 0, (error) => fail(error));
    // Registered before the pipe below, so it sees each chunk before the parser does.
    const recent = new RecentBytes(() => parser.writableLength);
    req.on('data', (chunk: Buffer) => recent.push(chunk));

    parser.on('file', (field, stream, info) => {
      if (failure !== undefined) {
        stream.resume();
        return;
      }
      try {
        // PostgreSQL cannot store a NUL, and no file name needs one.
        rejectNul(field, 'field');
        rejectNul(info.filename ?? '', `${field}.filename`);
      } catch (error) {
        stream.resume();
        fail(error);
        return;
      }
      active.add(stream);
      stream.once('close', () => active.delete(stream));
      stream.once('limit', () => fail(malformedUpload('a part is too large')));
      const task = options.onFile({ field, name: info.filename || field, stream });
      tasks.push(task);
      task.catch(fail);
    });
    parser.on('field', (name, value, info) => {
      if (failure !== undefined) return;
      if (info.valueTruncated) {
        fail(malformedUpload(`field ${name} is too long`));
        return;
      }
      try {
        rejectNul(name, 'field');
        rejectNul(value, name);
        options.onField(name, value);
      } catch (error) {
        fail(error);
      }
    });
    parser.on('partsLimit', () => fail(malformedUpload('too many parts')));
    parser.on('fieldsLimit', () => fail(malformedUpload('too many fields')));
    // A refused part header may have been refused for a NUL in a name: then answer as for any other NUL.
    parser.on('error', (error: Error) => fail(partHeaderNulError(recent, boundaryOf(req.headers['content-type'])) ?? malformedUpload(error.message)));
    parser.on('close', () => {
      stopIdle();
      finish();
    });
    req.on('close', () => {
      // The client went away before the body ended.
      if (!req.complete) fail(malformedUpload('the request was aborted'));
    });
    req.pipe(parser);
  });
}
