import type { Logger } from '@dam/logging';
import type { MetadataClient, OrphanObjects, PendingJournal, StalePending } from '../domain/ports';

export interface ReaperDeps {
  journal: PendingJournal;
  objects: OrphanObjects;
  metadata: Pick<MetadataClient, 'existingAssets' | 'liveKeys'>;
  logger: Logger;
  /** An entry not refreshed for this long belongs to a request whose process died. */
  graceMs: number;
}

function byGroup(entries: StalePending[]): StalePending[][] {
  const groups = new Map<number, StalePending[]>();
  for (const e of entries) groups.set(e.upload.group_id, [...(groups.get(e.upload.group_id) ?? []), e]);
  return [...groups.values()];
}

/** A replacement's journal id is `<asset>-<token>` (replaceAsset); a new asset's is the asset id. */
const isReplacement = (e: StalePending): boolean => e.id.includes('-');

async function reapGroup(deps: ReaperDeps, entries: StalePending[]): Promise<number> {
  const first = entries[0] as StalePending;
  const { group_id, user_id, role_id, role_name } = first.upload;
  const principal = { user_id, group_id, role_id, role_name, permissions: [], via: 'jwt' as const };
  // A new asset's object is registered once its asset exists; a replacement's once it is the asset's current original.
  const plain = entries.filter((e) => !isReplacement(e));
  const replacements = entries.filter(isReplacement);
  const existing = new Set(
    plain.length > 0
      ? await deps.metadata.existingAssets(
          principal,
          plain.map((e) => e.id),
        )
      : [],
  );
  const live = new Set(
    replacements.length > 0
      ? await deps.metadata.liveKeys(
          principal,
          replacements.map((e) => e.id.split('-')[0] ?? e.id),
          replacements.map((e) => e.upload.object_key),
        )
      : [],
  );
  let removed = 0;
  for (const entry of entries) {
    const key = entry.upload.object_key;
    if (!(isReplacement(entry) ? live.has(key) : existing.has(entry.id))) {
      // The incomplete upload first: removing it stops parts from adding up; the object may not exist at all.
      await deps.objects.abortIncompleteUploads(key);
      await deps.objects.remove(key);
      removed++;
      deps.logger.warn({ asset_id: entry.id, object_key: key, started_at: entry.upload.started_at }, 'removed the orphan object of an interrupted upload');
    }
    await deps.journal.remove(entry.id, entry.revision);
  }
  return removed;
}

/**
 * One pass of the orphan reaper (main.ts runs it as a poller): removes what a dead upload left behind. For each
 * stale journal entry whose asset metadata does not know, the object and any incomplete multipart upload of its
 * key, then the entry. An entry whose asset exists (the process died between registering and forgetting) only
 * loses its entry. Every step is idempotent, so two replicas reaping the same entry only do the work twice.
 * Resolves with how many orphan objects were removed.
 */
export async function reapOrphans(deps: ReaperDeps): Promise<number> {
  let removed = 0;
  for (const group of byGroup(await deps.journal.stale(deps.graceMs))) {
    // One group's failure (metadata down, S3 error) must not keep the others waiting; the next pass retries.
    removed += await reapGroup(deps, group).catch((error: unknown) => {
      deps.logger.error({ err: error, group_id: group[0]?.upload.group_id }, 'could not reap interrupted uploads');
      return 0;
    });
  }
  return removed;
}
