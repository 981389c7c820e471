import type { Principal } from '@dam/auth-tokens';
import { validationFailed, type ErrorDetail } from '@dam/errors';
import { canRead } from './asset-access';
import type { Job } from './job';
import type { RunInTransaction } from './ports';

const ASSET_ID = /^[A-Za-z0-9]{32}$/;
const EDGE_PATH = /^\/api\/v1\/files\/content\/([A-Za-z0-9]{32})(\/|$)/;

/** The asset a prefetch or purge entry names: an asset id, or a `cdn` link of this suite. */
export function assetOfCdnEntry(entry: string): string | undefined {
  if (ASSET_ID.test(entry)) return entry;
  let url: URL;
  try {
    url = new URL(entry);
  } catch {
    return undefined;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
  return EDGE_PATH.exec(url.pathname)?.[1];
}

/**
 * `POST /api/v1/cdn/prefetch` and `/purge` (CONTRACT §7): up to 100 signed links or asset ids, each naming an
 * asset the caller may read, as one job for link-signing (202 `{job_id}`). The job names its assets; the worker
 * reads them as the requester.
 */
export async function requestCdnJob(runInTransaction: RunInTransaction, caller: Principal, kind: 'prefetch' | 'purge', urls: string[]): Promise<Job> {
  return runInTransaction(async (tx) => {
    const problems: ErrorDetail[] = [];
    const ids: string[] = [];
    for (const [i, entry] of urls.entries()) {
      const id = assetOfCdnEntry(entry);
      if (!id) {
        problems.push({ path: `urls.${i}`, message: 'must be a cdn link of this service or a 32-character asset id' });
        continue;
      }
      const asset = await tx.assets.findById(caller.group_id, id);
      if (!asset || !canRead(caller, asset)) {
        problems.push({ path: `urls.${i}`, message: `no asset ${id}` });
        continue;
      }
      if (!ids.includes(id)) ids.push(id);
    }
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
    const first = await tx.assets.findById(caller.group_id, ids[0] as string);
    if (first) await tx.commands.send(job, first, 0);
    return job;
  });
}
