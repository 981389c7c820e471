import type { Principal } from '@dam/auth-tokens';
import { validationFailed, type ErrorDetail } from '@dam/errors';
import { parseCdnEntry } from '@dam/internal-api';
import type { Asset } from '../domain/asset';
import { canRead } from '../domain/asset-access';
import type { Job } from '../domain/job';
import type { RunInTransaction } from '../domain/ports';

/**
 * `POST /api/v1/cdn/prefetch` and `/purge` (CONTRACT §7): up to 100 signed links or asset ids, each naming an
 * asset the caller may read, as one job for link-signing (202 `{job_id}`). The job names its assets; the worker
 * reads them as the requester.
 */
export async function requestCdnJob(runInTransaction: RunInTransaction, caller: Principal, kind: 'prefetch' | 'purge', urls: string[]): Promise<Job> {
  return runInTransaction(async (tx) => {
    const problems: ErrorDetail[] = [];
    const assets = new Map<string, Asset>();
    for (const [i, entry] of urls.entries()) {
      const id = parseCdnEntry(entry)?.id;
      if (!id) {
        problems.push({ path: `urls.${i}`, message: 'must be a cdn link of this service or a 32-character asset id' });
        continue;
      }
      const asset = assets.get(id) ?? (await tx.assets.findById(caller.group_id, id));
      if (!asset || !canRead(caller, asset)) {
        problems.push({ path: `urls.${i}`, message: `no asset ${id}` });
        continue;
      }
      assets.set(id, asset);
    }
    const ids = [...assets.keys()];
    if (problems.length > 0) throw validationFailed(problems, 'Some entries do not name an asset of yours');
    const job = await tx.jobs.create({
      groupId: caller.group_id,
      type: kind === 'prefetch' ? 'cdn_prefetch' : 'cdn_purge',
      worker: 'link-signing',
      params: { urls, roleId: caller.role_id },
      assetIds: ids,
      steps: [],
      createdBy: caller.user_id,
    });
    // One command for the whole job, sent with its first asset.
    await tx.commands.send(job, assets.get(ids[0] as string) as Asset, 0);
    return job;
  });
}
