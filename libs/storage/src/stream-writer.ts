import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { PassThrough, type Readable } from 'node:stream';
import type { Storage } from './storage';
import { HEAD_BYTES, imageMetadata, sniffContentType } from './content-sniffer';

/** Shared across the files of one request: the request as a whole may not pass MAX_UPLOAD_BYTES. */
export interface ByteBudget {
  /** Throws (the 413 error) once the total passes the limit. */
  take(bytes: number): void;
}

export interface StoredOriginal {
  size: number;
  checksum: string;
  contentType: string;
  metadata: Record<string, unknown>;
}

/**
 * Streams one file part to `key`: keeps the first ~1 MiB to sniff the type and image size, then passes every
 * chunk through MD5 and the byte budget on the way to S3, waiting for the store to drain (back-pressure), so
 * memory stays flat whatever the size.
 *
 * On failure the stream handed to the minio client is ended, never errored: minio's multipart uploader does
 * not listen for source errors and would wait forever. The truncated object that results is removed by the
 * caller, which removes every key of a failed request.
 */
export async function storeOriginal(storage: Storage, key: string, file: Readable, budget: ByteBudget): Promise<StoredOriginal> {
  const source = file[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  const hash = createHash('md5');
  let size = 0;
  const take = (chunk: Buffer) => {
    budget.take(chunk.length);
    hash.update(chunk);
    size += chunk.length;
  };

  const headChunks: Buffer[] = [];
  let headLength = 0;
  let ended = false;
  try {
    while (headLength < HEAD_BYTES) {
      const next = await source.next();
      if (next.done) {
        ended = true;
        break;
      }
      take(next.value);
      headChunks.push(next.value);
      headLength += next.value.length;
    }
  } catch (error) {
    await source.return?.();
    throw error;
  }
  const head = Buffer.concat(headChunks);
  const contentType = await sniffContentType(head, !ended);
  const metadata = { ...(await imageMetadata(head, contentType)) };

  if (ended) {
    // The whole file fit in the head: one plain PUT. A streamed upload of unknown length goes multipart, and
    // S3 refuses a multipart upload with no parts, so an empty file must take this path.
    await storage.putBuffer(key, head, { contentType });
    return { size, checksum: hash.digest('hex'), contentType, metadata };
  }

  const body = new PassThrough({ highWaterMark: 256 * 1024 });
  // Errors surface through `put` and the waits below; the stream's own error event needs no second report.
  body.on('error', () => undefined);
  const put = storage.putStream(key, body, { contentType });
  // If the store fails mid-way nothing drains `body` any more: destroying both ends wakes the pump (its
  // pending read or drain wait rejects). Not Promise.race against a long-lived promise: every race would keep
  // its chunk reachable until that promise settles, i.e. the whole file.
  put.catch((error: unknown) => {
    const e = error instanceof Error ? error : new Error(String(error));
    file.destroy(e);
    body.destroy(e);
  });
  const write = async (chunk: Buffer) => {
    if (!body.write(chunk)) await once(body, 'drain');
  };

  try {
    await write(head);
    while (!ended) {
      const next = await source.next();
      if (next.done) break;
      take(next.value);
      await write(next.value);
    }
  } catch (error) {
    await source.return?.();
    if (!body.destroyed) body.end();
    // When the store failed first, `error` is already its error (both ends were destroyed with it).
    await put.catch(() => undefined);
    throw error;
  }
  body.end();
  await put;
  return { size, checksum: hash.digest('hex'), contentType, metadata };
}
