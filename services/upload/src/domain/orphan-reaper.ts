import type { Logger } from '@dam/logging';
import type { Storage } from '@dam/storage';
import type { MetadataClient } from '../adapters/metadata.client';
import type { PendingJournal, StalePending } from '../adapters/pending-upload.journal';

export interface ReaperDeps {
  journal: PendingJournal;
  storage: Storage;
  metadata: Pick<MetadataClient, 'existingAssets' | 'liveKeys'>;
  logger: Logger;
  /** An entry not refreshed for this long belongs to a request whose process died. */
  graceMs: number;
  intervalMs: number;
}

export interface Reaper {
  /** One pass; resolves with how many orphan objects were removed. */
  runOnce(): Promise<number>;
  stop(): Promise<void>;
}

function byGroup(entries: StalePending[]): StalePending[][] {
  const groups = new Map<number, StalePending[]>();
  for (const e of entries) groups.set(e.upload.group_id, [...(groups.get(e.upload.group_id) ?? []), e]);
  return [...groups.values()];
}

/**
 * Aborts every incomplete multipart upload of exactly `key`. Not minio's removeIncompleteUpload: radosgw
 * still lists an upload for a moment after it was completed or aborted, and aborting that one answers
 * NoSuchUpload, which here only means the work is already done.
 */
async function abortIncompleteUploads(storage: Storage, key: string): Promise<void> {
  const uploadIds: string[] = [];
  const listing = storage.client.listIncompleteUploads(storage.bucket, key, true) as AsyncIterable<{ key: string; uploadId: string }>;
  for await (const upload of listing) if (upload.key === key) uploadIds.push(upload.uploadId);
  for (const uploadId of uploadIds) {
    await storage.client.abortMultipartUpload(storage.bucket, key, uploadId).catch((error: unknown) => {
      if ((error as { code?: string }).code !== 'NoSuchUpload') throw error;
    });
  }
}

/**
 * Removes what a dead upload left behind: for each stale journal entry whose asset metadata does not know, the
 * object and any incomplete multipart upload of its key, then the entry. An entry whose asset exists (the
 * process died between registering and forgetting) only loses its entry. Every step is idempotent, so two
 * replicas reaping the same entry only do the work twice.
 */
export function startOrphanReaper(deps: ReaperDeps): Reaper {
  const { journal, storage, logger } = deps;

  const reapGroup = async (entries: StalePending[]): Promise<number> => {
    const first = entries[0] as StalePending;
    const { group_id, user_id, role_id, role_name } = first.upload;
    const principal = { user_id, group_id, role_id, role_name, permissions: [], via: 'jwt' as const };
    // A new asset's object is registered once its asset exists; a replacement's (journal id `<asset>-<token>`)
    // once it is the asset's current original.
    const replacement = (e: StalePending) => e.id.includes('-');
    const plain = entries.filter((e) => !replacement(e));
    const replacements = entries.filter(replacement);
    const existing = new Set(plain.length > 0 ? await deps.metadata.existingAssets(principal, plain.map((e) => e.id)) : []);
    const live = new Set(
      replacements.length > 0
        ? await deps.metadata.liveKeys(principal, replacements.map((e) => e.id.split('-')[0] ?? e.id), replacements.map((e) => e.upload.object_key))
        : [],
    );
    let removed = 0;
    for (const entry of entries) {
      const key = entry.upload.object_key;
      if (!(replacement(entry) ? live.has(key) : existing.has(entry.id))) {
        // The incomplete upload first: removing it stops parts from adding up; the object may not exist at all.
        await abortIncompleteUploads(storage, key);
        await storage.remove(key);
        removed++;
        logger.warn({ asset_id: entry.id, object_key: key, started_at: entry.upload.started_at }, 'removed the orphan object of an interrupted upload');
      }
      await journal.remove(entry.id, entry.revision);
    }
    return removed;
  };

  const runOnce = async (): Promise<number> => {
    let removed = 0;
    for (const group of byGroup(await journal.stale(deps.graceMs))) {
      // One group's failure (metadata down, S3 error) must not keep the others waiting; the next pass retries.
      removed += await reapGroup(group).catch((error: unknown) => {
        logger.error({ err: error, group_id: group[0]?.upload.group_id }, 'could not reap interrupted uploads');
        return 0;
      });
    }
    return removed;
  };

  let running: Promise<unknown> = Promise.resolve();
  let busy = false;
  const tick = () => {
    // A slow pass (many entries, a slow S3) is never overlapped by the next one.
    if (busy) return;
    busy = true;
    running = runOnce()
      .catch((error: unknown) => logger.error({ err: error }, 'orphan reaper pass failed'))
      .finally(() => (busy = false));
  };
  // A first pass at start: the usual way a crashed upload's leftovers are found is the restart that follows.
  tick();
  const timer = setInterval(tick, deps.intervalMs);
  timer.unref();
  return {
    runOnce,
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
