import { isNotFoundError, ObjectNotFoundError, type Storage } from '@dam/storage';
import type { OrphanObjects, SourceObjects } from '../domain/ports';

/** The asset bucket's leftovers of an interrupted upload, through the storage's S3 client. */
export function s3OrphanObjects(storage: Storage): OrphanObjects {
  return {
    remove: (key) => storage.remove(key),
    /**
     * Not minio's removeIncompleteUpload: radosgw still lists an upload for a moment after it was completed or
     * aborted, and aborting that one answers NoSuchUpload, which here only means the work is already done.
     */
    async abortIncompleteUploads(key) {
      const uploadIds: string[] = [];
      const listing = storage.client.listIncompleteUploads(storage.bucket, key, true) as AsyncIterable<{ key: string; uploadId: string }>;
      for await (const upload of listing) if (upload.key === key) uploadIds.push(upload.uploadId);
      for (const uploadId of uploadIds) {
        await storage.client.abortMultipartUpload(storage.bucket, key, uploadId).catch((error: unknown) => {
          if ((error as { code?: string }).code !== 'NoSuchUpload') throw error;
        });
      }
    },
  };
}

/** Other buckets' objects (INGEST_S3_BUCKETS), read with the storage's credentials. */
export function s3SourceObjects(storage: Storage): SourceObjects {
  return {
    async size(bucket, key) {
      const stat = await storage.client.statObject(bucket, key).catch((error: unknown) => {
        throw isNotFoundError(error) ? new ObjectNotFoundError(`${bucket}/${key}`) : error;
      });
      return stat.size;
    },
    read: (bucket, key) => storage.client.getObject(bucket, key),
  };
}
