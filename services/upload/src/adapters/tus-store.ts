import { rm } from 'node:fs/promises';
import { createReadStream } from 'node:fs';
import { tmpdir } from 'node:os';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type * as TusS3 from '@tus/s3-store' with { 'resolution-mode': 'import' };
import type * as TusUtils from '@tus/utils' with { 'resolution-mode': 'import' };
import type { StorageConfig } from '@dam/storage';

// @tus/* ship ES modules only: Node 20.19+ requires them (see tus.routes.ts).
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { S3Store } = require('@tus/s3-store') as typeof TusS3;
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { StreamSplitter } = require('@tus/utils') as typeof TusUtils;

type Permit = Awaited<ReturnType<TusS3.S3Store['partUploadSemaphore']['acquire']>>;

/** Every object of a resumable upload lives under this prefix until its asset is made (then it is removed). */
export const TUS_PREFIX = 'tus/';

/**
 * Parts being filled or sent to S3 at once, in the whole process: each is a file of one part in the temp folder
 * (os.tmpdir(), upload's /tmp emptyDir in k8s/) from its first byte until S3 has it, and a PATCH that finds no free
 * slot waits. A slot is held while a slow client fills its part, so this also bounds the resumable uploads that
 * move at once in one process: the library's own 60, pinned here, with parts of TUS_PART_SIZE (8 MiB) is 480 MiB
 * (deploy/test/k8s-production.unit.test.ts holds /tmp to it).
 */
export const TUS_PARTS_IN_FLIGHT = 60;

/**
 * @tus/s3-store's S3 store (a multipart upload per tus upload, `<id>.info` holding its state, `<id>.part` a
 * trailing piece under S3's 5 MiB minimum) with one change: its sweep of expired uploads stays under TUS_PREFIX.
 * The library's own sweep lists every multipart upload of the bucket, which would abort other writers' uploads
 * (an Upload Asset of a large file, a conversion); it also leaves finished uploads that never became assets.
 */
export class TusS3Store extends S3Store {
  constructor(options: TusS3.Options) {
    super(options);
    // Verified by the routes in front of the tus server (tus.routes.ts) before a byte reaches this store.
    this.extensions.push('checksum');
    // The size an upload of deferred length is cut for: parts of the preferred size (10,000 of 8 MiB is 78 GiB,
    // beyond MAX_UPLOAD_BYTES), not of the library's 5 TiB.
    (this as { maxUploadSize: number }).maxUploadSize = this.preferredPartSize * this.maxMultipartParts;
  }

  override async deleteExpired(): Promise<number> {
    const expiry = this.getExpiration();
    if (expiry === 0) return 0;
    const before = Date.now() - expiry;
    let removed = 0;
    let keyMarker: string | undefined;
    let uploadIdMarker: string | undefined;
    for (;;) {
      const page = await this.client.listMultipartUploads({ Bucket: this.bucket, Prefix: TUS_PREFIX, KeyMarker: keyMarker, UploadIdMarker: uploadIdMarker });
      for (const u of page.Uploads ?? []) {
        if (!u.Key || !u.UploadId || !u.Initiated || u.Initiated.getTime() > before) continue;
        await this.client.abortMultipartUpload({ Bucket: this.bucket, Key: u.Key, UploadId: u.UploadId });
        removed += 1;
      }
      if (!page.IsTruncated) break;
      keyMarker = page.NextKeyMarker;
      uploadIdMarker = page.NextUploadIdMarker;
    }
    // What is left: `.info` and `.part` objects of those uploads, and finished uploads whose asset was never made.
    let token: string | undefined;
    for (;;) {
      const page = await this.client.listObjectsV2({ Bucket: this.bucket, Prefix: TUS_PREFIX, ContinuationToken: token });
      const stale = (page.Contents ?? []).filter((o) => o.Key && o.LastModified && o.LastModified.getTime() <= before).map((o) => ({ Key: o.Key as string }));
      if (stale.length > 0) {
        await this.client.deleteObjects({ Bucket: this.bucket, Delete: { Objects: stale, Quiet: true } });
        removed += stale.length;
        for (const o of stale) await this.clearCache(o.Key.replace(/\.(info|part)$/, ''));
      }
      if (!page.IsTruncated) break;
      token = page.NextContinuationToken;
    }
    return removed;
  }

  /**
   * The library's uploadParts (@tus/s3-store 2.0.7) with its part slots given back on every path. There, a PATCH
   * whose body ends with an error (the client went away, the idle timeout) while it waits for a free slot still
   * gets the slot once one is free, after the request is over, and never gives it back (nor the part file it then
   * opens): every such PATCH took one of the process's TUS_PARTS_IN_FLIGHT for good, and once all were gone every
   * PATCH of every resumable upload waited for ever. Here a slot that arrives for a request already ended goes back
   * at once, and a slot handed over with a finished part is released by that part only (the library's error path
   * released it as well, while the part was still on its way to S3). The rest is the library's, unchanged.
   */
  protected override async uploadParts(metadata: TusS3.MetadataValue, readStream: Readable, currentPartNumber: number, offset: number): Promise<number> {
    const size = metadata.file.size;
    const promises: Promise<void>[] = [];
    let pendingChunkFilepath: string | null = null;
    let bytesUploaded = 0;
    let permit: Permit | undefined;
    const splitterStream: TusUtils.StreamSplitter = new StreamSplitter({ chunkSize: this.calcOptimalPartSize(size), directory: tmpdir() })
      .on('beforeChunkStarted', async () => {
        const acquired = await this.partUploadSemaphore.acquire();
        if (splitterStream.destroyed) {
          await acquired.release();
          throw new Error('the request ended while it waited for a part slot');
        }
        permit = acquired;
      })
      .on('chunkStarted', (filepath: string) => {
        pendingChunkFilepath = filepath;
      })
      .on('chunkFinished', ({ path, size: partSize }: { path: string; size: number }) => {
        pendingChunkFilepath = null;
        const acquiredPermit = permit;
        permit = undefined;
        const partNumber = currentPartNumber++;
        offset += partSize;
        const isFinalPart = size === offset;
        const deferred = (async () => {
          try {
            // Only the first chunk of each PATCH request can prepend an incomplete part (last chunk) from the previous request.
            const readable = createReadStream(path);
            if (partSize >= this.minPartSize || isFinalPart) await this.uploadPart(metadata, readable, partNumber);
            else await this.uploadIncompletePart(metadata.file.id, readable);
            bytesUploaded += partSize;
          } catch (error) {
            // Stops processing more chunks.
            splitterStream.destroy(error instanceof Error ? error : new Error(String(error)));
            throw error;
          } finally {
            rm(path).catch(() => undefined);
            acquiredPermit?.release().catch(() => undefined);
          }
        })();
        // Rejections are thrown by Promise.all below.
        deferred.catch(() => undefined);
        promises.push(deferred);
      })
      .on('chunkError', () => {
        const held = permit;
        permit = undefined;
        held?.release().catch(() => undefined);
      });
    try {
      await pipeline(readStream, splitterStream);
    } catch (error) {
      const pending = pendingChunkFilepath as string | null;
      if (pending !== null) await rm(pending).catch(() => undefined);
      promises.push(Promise.reject(error instanceof Error ? error : new Error(String(error))));
    } finally {
      // Nothing keeps running in the background: every part has ended before this returns.
      await Promise.allSettled(promises);
      await Promise.all(promises);
    }
    return bytesUploaded;
  }

  /** Removes a finished upload's objects once its asset holds the bytes. */
  async discard(id: string): Promise<void> {
    await this.client.deleteObjects({
      Bucket: this.bucket,
      Delete: { Objects: [{ Key: id }, { Key: this.infoKey(id) }, { Key: this.partKey(id, true) }], Quiet: true },
    });
    await this.clearCache(id);
  }
}

export function createTusStore(storage: StorageConfig, opts: { expiryMs: number; partSize: number; partsInFlight?: number }): TusS3Store {
  return new TusS3Store({
    partSize: opts.partSize,
    maxConcurrentPartUploads: opts.partsInFlight ?? TUS_PARTS_IN_FLIGHT,
    // Expiry is this store's own sweep (deleteExpired), not a bucket lifecycle rule over object tags.
    useTags: false,
    expirationPeriodInMilliseconds: opts.expiryMs,
    s3ClientConfig: {
      bucket: storage.bucket,
      endpoint: storage.endpoint,
      region: storage.region ?? 'us-east-1',
      forcePathStyle: true,
      // The SDK's default CRC32 trailers (aws-chunked bodies) are not understood by every S3 server (radosgw).
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      credentials: { accessKeyId: storage.accessKey, secretAccessKey: storage.secretKey },
      // The SDK waits without a bound by default: a hung S3 server would hold a PATCH for ever (S3_TIMEOUT_MS, as
      // for every other S3 call; the parts it sends are spooled to disk first, so the source never idles).
      requestHandler: { connectionTimeout: 5000, requestTimeout: storage.timeoutMs ?? 30_000 },
    },
  });
}
