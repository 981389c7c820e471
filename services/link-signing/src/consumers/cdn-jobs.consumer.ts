import { randomUUID } from 'node:crypto';
import type { JetStreamClient } from '@nats-io/jetstream';
import { CDN_EVICT, publishEvent, type CdnEvict } from '@dam/events';
import type { Worker } from '@dam/http';
import { jobWorker, type JobHandler, type JobRuntime } from '@dam/jobs';
import type { Logger } from '@dam/logging';
import { parseCdnEntry } from '@dam/internal-api';
import type { Storage } from '@dam/storage';
import { ByteCache } from '../adapters/byte-cache';
import { principalOfOwner, type SuiteClients } from '../adapters/suite.clients';

export const CDN_JOBS_DURABLE = 'link-signing-cdn-jobs';
/** A folder (HLS, Deep Zoom) prefetched whole: at most this many files. */
const MAX_FOLDER_FILES = 5000;

export interface CdnJobDeps {
  /** Where purges are published to every replica (dam.internal.cdn.evict). */
  js: JetStreamClient;
  clients: SuiteClients;
  storage: Storage;
  cache: ByteCache;
  logger: Logger;
}

/**
 * Runs one CDN job as the user who asked: a prefetch reads each named object (every file of a folder key) into
 * this replica's byte cache, once; a purge drops them from every replica's cache (published on
 * `dam.internal.cdn.evict`, and applied here at once). The job completes with the entries that failed listed;
 * it fails only when every entry did.
 */
export function cdnJobs(deps: CdnJobDeps): JobHandler {
  return {
    worker: 'link-signing',
    durable: CDN_JOBS_DURABLE,
    firstStep: (command) => command.type,
    noun: 'the CDN job',
    async run({ command, progress }) {
      const urls = command.urls ?? [];
      const failures: string[] = [];
      if (!command.requested_by) throw new Error('the job names no requester');
      const principal = principalOfOwner({ ...command.requested_by, group_id: Number(command.group_id), active: true });
      const evict: CdnEvict = { id: randomUUID(), group_id: command.group_id, asset_ids: [], object_keys: [] };
      for (const [i, raw] of urls.entries()) {
        progress(i, urls.length);
        const entry = parseCdnEntry(raw);
        if (!entry) {
          failures.push(`${i}: not a cdn link or asset id`);
          continue;
        }
        if (command.type === 'cdn_purge' && !entry.key) {
          evict.asset_ids.push(entry.id);
          continue;
        }
        const [item] = await deps.clients.delivery(principal, [entry.id], entry.key ?? 'original');
        if (!item || 'error' in item) {
          failures.push(`${i}: ${item && 'error' in item ? item.error.message : 'not found'}`);
          continue;
        }
        const t = item.target;
        const objects = entry.file && t.folder ? [`${t.folder}${entry.file}`] : t.folder ? [t.folder] : [t.object_key];
        if (command.type === 'cdn_purge') {
          evict.object_keys.push(...objects);
          continue;
        }
        for (const objectKey of objects) {
          const keys = objectKey.endsWith('/') ? (await deps.storage.listKeys(objectKey)).slice(0, MAX_FOLDER_FILES) : [objectKey];
          for (const key of keys) {
            const stat = await deps.storage.stat(key);
            if (!stat) {
              failures.push(`${i}: ${key} is missing`);
              continue;
            }
            const stored = await deps.cache.fillFrom({ key: ByteCache.keyOf(key, stat.etag), objectKey: key, assetId: t.asset_id, size: stat.size }, () =>
              deps.storage.getStream(key),
            );
            if (!stored && deps.cache.cacheable(stat.size)) failures.push(`${i}: ${key} could not be read`);
          }
        }
      }
      if (command.type === 'cdn_purge' && (evict.asset_ids.length > 0 || evict.object_keys.length > 0)) {
        applyEvict(deps.cache, evict);
        await publishEvent(deps.js, CDN_EVICT.subject, CDN_EVICT.schema, evict, { msgId: evict.id });
      }
      deps.logger.info({ job_id: command.job_id, type: command.type, entries: urls.length, failed: failures.length }, 'cdn job finished');
      const error = failures.length > 0 ? `${failures.length} of ${urls.length} entries failed: ${failures.slice(0, 10).join('; ')}` : undefined;
      return { state: failures.length === urls.length && urls.length > 0 ? 'FAILED' : 'COMPLETED', report: error ? { error } : {} };
    },
  };
}

/** Drops what a purge names from this replica's cache. */
export function applyEvict(cache: ByteCache, evict: CdnEvict): number {
  let n = 0;
  for (const id of evict.asset_ids) n += cache.evictAsset(id);
  for (const key of evict.object_keys) n += cache.evictObject(key);
  return n;
}

export const cdnJobWorker = (deps: CdnJobDeps, runtime: JobRuntime): Worker => jobWorker(cdnJobs(deps), runtime);
