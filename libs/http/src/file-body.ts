import { open } from 'node:fs/promises';
import type { ServerResponse } from 'node:http';

/** Bytes read at once, and buffers per response (one being read into while the other is written). */
const CHUNK_BYTES = 1024 * 1024;
const BUFFERS = 2;

/**
 * Sends `length` bytes of `file` from `start` as the response body, then ends it, through two buffers reused for the
 * whole file: the next slice is read while the last one is written, and a buffer is read into again only once the
 * socket took it. A read stream allocates a fresh buffer for every read instead; at hundreds of MiB/s those
 * allocations (external memory to V8) make it run a full collection of the whole heap every 64 MiB or so, which cost
 * more than the reads and writes themselves (bench/byte-cpu.bench.ts: an edge byte-cache hit from 1.67 to about 0.6
 * CPU s/GiB). `sent` hears of each slice handed to the response. Stops when the client goes (resolves), the file
 * descriptor closed either way; a read failure rejects, and the caller cuts the connection (headers are out).
 */
export async function sendFileBytes(res: ServerResponse, file: string, start: number, length: number, sent?: (bytes: number) => void): Promise<void> {
  const handle = await open(file, 'r');
  let closed = res.destroyed;
  let wake: (() => void) | undefined;
  const signal = () => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  const onClose = () => {
    closed = true;
    signal();
  };
  res.once('close', onClose);
  try {
    const size = Math.min(CHUNK_BYTES, length);
    const free: Buffer[] = Array.from({ length: size > 0 ? BUFFERS : 0 }, () => Buffer.allocUnsafeSlow(size));
    const end = start + length;
    let position = start;
    while (position < end && !closed) {
      const buffer = free.pop();
      if (!buffer) {
        await new Promise<void>((resolve) => (wake = resolve));
        continue;
      }
      const { bytesRead } = await handle.read(buffer, 0, Math.min(size, end - position), position);
      if (bytesRead === 0) throw new Error(`${file} ended ${end - position} bytes early`);
      if (closed) break;
      position += bytesRead;
      sent?.(bytesRead);
      res.write(bytesRead === buffer.length ? buffer : buffer.subarray(0, bytesRead), (error) => {
        // A write that failed (the connection went) never returns its buffer: 'close' ends the loop.
        if (!error) free.push(buffer);
        signal();
      });
    }
    if (!closed) res.end();
  } finally {
    res.off('close', onClose);
    await handle.close();
  }
}
