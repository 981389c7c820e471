import { Readable } from 'node:stream';
import type { AssetData } from '@dam/events';
import type { Storage } from '@dam/storage';
import { exportPrefix, type DeletedRecordExports } from '../domain/bulk-delete-export';

/** Parts are named by batch number, zero-padded so that the bucket's listing order is the job's order. */
const partKey = (groupId: number, jobId: number, part: number): string => `${exportPrefix(groupId, jobId)}${String(part).padStart(8, '0')}.jsonl`;

/** The export as objects under `exports/<group>/bulk-delete-<job>/`, one per batch of the job. */
export function bulkDeleteExports(storage: Pick<Storage, 'putBuffer' | 'listKeys' | 'getStream'>): DeletedRecordExports {
  return {
    async writePart(groupId, jobId, part, records: readonly AssetData[]) {
      const body = Buffer.from(records.map((r) => `${JSON.stringify(r)}\n`).join(''));
      await storage.putBuffer(partKey(groupId, jobId, part), body, { contentType: 'application/x-ndjson', size: body.length });
    },
    async open(groupId, jobId) {
      const keys = (await storage.listKeys(exportPrefix(groupId, jobId))).sort();
      // One part open at a time: the answer streams them back to back.
      async function* parts(): AsyncGenerator<Buffer> {
        for (const key of keys) {
          for await (const chunk of await storage.getStream(key)) yield chunk as Buffer;
        }
      }
      return Readable.from(parts());
    },
  };
}
