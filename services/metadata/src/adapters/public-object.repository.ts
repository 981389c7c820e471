import { randomBytes } from 'node:crypto';
import { withTransaction, type Pool, type PoolClient } from '@dam/db';
import { isActiveContentType } from '@dam/http';
import type { Logger } from '@dam/logging';
import { contentTypeOfFile, ObjectNotFoundError, PUBLIC_PREFIX, publicCopyPrefix, type Storage } from '@dam/storage';
import type { PublicObjects, PublicSource } from '../domain/ports';

type Queryable = Pick<Pool | PoolClient, 'query'>;

/**
 * The published keys (migration 020): each one a copy under its own folder of the public prefix. Revoking one
 * drops its row and queues its folder for removal in the same transaction (the `object_deletions` queue removes
 * it after the commit, retrying as it does for every removal).
 */
export class PublicObjectRepository implements PublicObjects {
  constructor(private readonly db: Queryable) {}

  async add(groupId: number, assetId: string, entries: readonly PublicSource[]): Promise<Array<{ key: string; objectKey: string }>> {
    const published: Array<{ key: string; objectKey: string }> = [];
    for (const e of entries) {
      const prefix = publicCopyPrefix(String(groupId), assetId, randomBytes(8).toString('hex'));
      // A key published already keeps its folder (and URL); it is copied again only if its source moved.
      const { rows } = await this.db.query<{ prefix: string; entry: string }>(
        // Attempted now: the request copies it right after the commit (the poller leaves it to it for a minute).
        `INSERT INTO public_copies (prefix, group_id, asset_id, key, source, entry, attempted_at) VALUES ($1, $2, $3, $4, $5, $6, now())
         ON CONFLICT (group_id, asset_id, key) DO UPDATE SET source = EXCLUDED.source, entry = EXCLUDED.entry,
           copied_at = CASE WHEN public_copies.source = EXCLUDED.source AND public_copies.entry = EXCLUDED.entry THEN public_copies.copied_at END,
           attempted_at = now()
         RETURNING prefix, entry`,
        [prefix, groupId, assetId, e.key, e.source, e.entry],
      );
      const row = rows[0]!;
      published.push({ key: e.key, objectKey: `${row.prefix}${row.entry}` });
    }
    return published;
  }

  async refresh(groupId: number, assetId: string, entries: readonly PublicSource[]): Promise<Array<{ key: string; objectKey: string }>> {
    if (entries.length === 0) return [];
    const { rows } = await this.db.query<{ key: string; prefix: string; entry: string }>(
      `UPDATE public_copies p SET source = t.source, entry = t.entry, copied_at = NULL, attempted_at = NULL
       FROM unnest($3::text[], $4::text[], $5::text[]) AS t(key, source, entry)
       WHERE p.group_id = $1 AND p.asset_id = $2 AND p.key = t.key RETURNING p.key, p.prefix, p.entry`,
      [groupId, assetId, entries.map((e) => e.key), entries.map((e) => e.source), entries.map((e) => e.entry)],
    );
    return rows.map((r) => ({ key: r.key, objectKey: `${r.prefix}${r.entry}` }));
  }

  async revoke(groupId: number, assetId: string, keys?: readonly string[]): Promise<void> {
    await this.db.query(
      `WITH gone AS (DELETE FROM public_copies WHERE group_id = $1 AND asset_id = $2 AND ($3::text[] IS NULL OR key = ANY($3)) RETURNING prefix)
       INSERT INTO object_deletions (key) SELECT prefix FROM gone ON CONFLICT (key) DO UPDATE SET not_before = now()`,
      [groupId, assetId, keys ?? null],
    );
  }
}

interface CopyRow {
  prefix: string;
  group_id: number;
  asset_id: string;
  key: string;
  source: string;
  entry: string;
}

/** Copies at once of one folder (HLS segments, Deep Zoom tiles): each is one server-side CopyObject. */
const FOLDER_COPIES_AT_ONCE = 8;
/** A copy attempted this long ago and not finished (failed, interrupted) is the poller's to make again. */
const RETRY_AFTER = '1 minute';

/**
 * The published object's copy under its folder: the type it is stored with, and for an active type (HTML, SVG, XML,
 * script) `Content-Disposition: attachment`, so the public address never renders it (security review F15). A
 * multi-file conversion's folder is copied whole (its descriptor names its files relatively).
 */
async function copyFiles(storage: Pick<Storage, 'copy' | 'listKeys'>, row: CopyRow): Promise<void> {
  const metadataOf = (fallbackType: string) => (source: { contentType: string | undefined }) => {
    const contentType = source.contentType || fallbackType;
    return isActiveContentType(contentType) ? { contentType, contentDisposition: 'attachment' } : { contentType };
  };
  if (!row.source.endsWith('/')) {
    await storage.copy(row.source, `${row.prefix}${row.entry}`, { metadata: metadataOf('application/octet-stream') });
    return;
  }
  const keys = await storage.listKeys(row.source);
  if (keys.length === 0) throw new ObjectNotFoundError(row.source);
  // Under the folder's own name, as `entry` says (`hls-video/master.m3u8`).
  const folder = `${row.prefix}${row.entry.slice(0, row.entry.indexOf('/') + 1)}`;
  for (let i = 0; i < keys.length; i += FOLDER_COPIES_AT_ONCE) {
    await Promise.all(
      keys.slice(i, i + FOLDER_COPIES_AT_ONCE).map((key) => {
        const file = key.slice(row.source.length);
        return storage.copy(key, `${folder}${file}`, { metadata: metadataOf(contentTypeOfFile(file)) });
      }),
    );
  }
}

export interface PublicCopySyncOptions {
  logger?: Logger;
  /** How often the store's public prefix is compared with the database (default 10 minutes; 0: every pass). */
  sweepEveryMs?: number;
}

/** Which copies a pass makes: one asset's (Set Public Access waits for them), or any left pending (the poller). */
export type PublicCopySync = (asset?: { groupId: number; assetId: string }) => Promise<number>;

/**
 * Makes the pending copies, keeps the bucket policy the one constant statement on the public prefix, and now and
 * then compares the prefix with the database (the sweep). Set Public Access calls it for its asset; the
 * public-copies poller for whatever is left (an older install's public objects after migration 020, a copy that
 * failed or was interrupted) and for the sweep.
 *
 * A copy is made while its row exists (the row is committed first) and marked copied under the row's lock only if
 * the row still stands; a revocation deletes the row under that lock and queues the folder's removal in the same
 * transaction. So whichever comes first, no copy outlives its revocation: the copier removes a copy whose row is
 * gone. Only a crash between a copy and that check can leave one behind, and the sweep, the check of the database
 * against the store the policy writer used to be, removes folders no row names (and has copies made again that
 * went missing).
 */
export function publicPolicySync(pool: Pool, storage: Storage, options: PublicCopySyncOptions = {}): PublicCopySync {
  let policy: Promise<boolean> | undefined;
  const ensurePolicy = (): Promise<boolean> => {
    policy ??= storage.publishPrefix(PUBLIC_PREFIX).catch((error: unknown) => {
      policy = undefined;
      throw error;
    });
    return policy;
  };
  const sweepEveryMs = options.sweepEveryMs ?? 600_000;
  let lastSweep: number | undefined;

  /**
   * Copies one pending row without holding a connection through the S3 copy: the row is read (the poller claims it
   * by its attempt time, so replicas do not copy one row at once), copied, and then marked copied if it still stands
   * with the same source, under its lock. A revocation deletes the row under that lock too, and queues the folder's
   * removal: one that came first leaves no row, and the copy just made is removed here; one that comes after finds
   * the copy there. 'done': nothing left to do (copied by another, revoked, or moved to a new source: pending again).
   */
  const copyOne = async (prefix: string, claim: boolean): Promise<{ outcome: 'copied' | 'done' | 'gone' } | { outcome: 'failed'; error: unknown }> => {
    const { rows } = claim
      ? await pool.query<CopyRow>(
          `UPDATE public_copies SET attempted_at = now() WHERE prefix = $1 AND copied_at IS NULL
             AND (attempted_at IS NULL OR attempted_at < now() - interval '${RETRY_AFTER}')
           RETURNING prefix, group_id, asset_id, key, source, entry`,
          [prefix],
        )
      : await pool.query<CopyRow>('SELECT prefix, group_id, asset_id, key, source, entry FROM public_copies WHERE prefix = $1 AND copied_at IS NULL', [prefix]);
    const row = rows[0];
    if (!row) return { outcome: 'done' };
    try {
      await copyFiles(storage, row);
    } catch (error) {
      if (!(error instanceof ObjectNotFoundError)) return { outcome: 'failed', error };
      await dropGone(row);
      return { outcome: 'gone' };
    }
    const standing = await withTransaction(pool, async (client) => {
      const { rows: now } = await client.query<{ source: string; entry: string }>('SELECT source, entry FROM public_copies WHERE prefix = $1 FOR UPDATE', [
        prefix,
      ]);
      const current = now[0];
      if (!current) return 'revoked' as const;
      if (current.source !== row.source || current.entry !== row.entry) return 'moved' as const;
      await client.query('UPDATE public_copies SET copied_at = now() WHERE prefix = $1', [prefix]);
      return 'copied' as const;
    });
    if (standing === 'revoked') await storage.removePrefix(prefix);
    if (standing !== 'copied') return { outcome: 'done' };
    // Set Public Access wrote this copy's URL itself; the poller's rows may be an older install's key, still showing
    // the object's own URL, or a remade one naming its old file: now the copy's (else a no-op).
    if (!claim) return { outcome: 'copied' };
    await pool.query(
      `UPDATE assets SET public_urls = jsonb_set(public_urls, ARRAY[$3], to_jsonb($4::text)), update_time = now(), version = version + 1
       WHERE group_id = $1 AND id = $2 AND public_urls ? $3 AND public_urls ->> $3 IS DISTINCT FROM $4
         AND EXISTS (SELECT 1 FROM public_copies WHERE prefix = $5)`,
      [row.group_id, row.asset_id, row.key, storage.publicUrl(`${row.prefix}${row.entry}`), row.prefix],
    );
    return { outcome: 'copied' };
  };

  /** The source is gone (the conversion was deleted meanwhile, an older install's stale entry): the key is not public. */
  const dropGone = async (row: CopyRow): Promise<void> => {
    await withTransaction(pool, async (client) => {
      // The asset first, as every revocation locks it.
      await client.query('SELECT 1 FROM assets WHERE group_id = $1 AND id = $2 FOR UPDATE', [row.group_id, row.asset_id]);
      const { rowCount } = await client.query('DELETE FROM public_copies WHERE prefix = $1', [row.prefix]);
      if (!rowCount) return;
      await client.query('INSERT INTO object_deletions (key) VALUES ($1) ON CONFLICT (key) DO UPDATE SET not_before = now()', [row.prefix]);
      await client.query(
        `UPDATE assets SET public_urls = public_urls - $3::text, update_time = now(), version = version + 1 WHERE group_id = $1 AND id = $2 AND public_urls ? $3`,
        [row.group_id, row.asset_id, row.key],
      );
    });
    options.logger?.warn({ prefix: row.prefix, source: row.source, key: row.key }, 'public key revoked: its object is gone');
  };

  /**
   * Folders under the public prefix that no row names go; rows copied before the listing began whose copy is
   * missing are copied again. The listing (in key order) and the rows (`prefix` sorts bytewise, COLLATE "C", as S3
   * lists) are walked side by side, a thousand folders at a time, so a million public objects need no more memory.
   */
  const sweep = async (): Promise<{ removed: number; recopied: number }> => {
    const started = new Date();
    let removed = 0;
    let recopied = 0;
    let low = '';
    const recopy = async (prefixes: string[]) => {
      if (prefixes.length === 0) return;
      const { rowCount } = await pool.query('UPDATE public_copies SET copied_at = NULL, attempted_at = NULL WHERE prefix = ANY($1) AND copied_at < $2', [
        prefixes,
        started,
      ]);
      recopied += rowCount ?? 0;
    };
    /** One run of listed folders (complete: the listing has moved past them), `high` the last. */
    const check = async (listed: Map<string, Set<string>>, high: string | undefined) => {
      const { rows } = await pool.query<{ prefix: string; entry: string; source: string; copied: boolean }>(
        `SELECT prefix, entry, source, copied_at IS NOT NULL AS copied FROM public_copies WHERE prefix > $1 AND ($2::text IS NULL OR prefix <= $2)`,
        [low, high ?? null],
      );
      const named = new Set(rows.map((r) => r.prefix));
      // A row whose folder is missing, or (one file) lacks its file.
      await recopy(
        rows.filter((r) => r.copied && (!listed.has(r.prefix) || (!r.source.endsWith('/') && !listed.get(r.prefix)!.has(r.entry)))).map((r) => r.prefix),
      );
      const orphans = [...listed.keys()].filter((p) => !named.has(p));
      if (orphans.length > 0) {
        // Checked again after the listing saw them: a copy exists only once its row was committed, so a row absent
        // now was revoked (its removal is queued already) or never existed.
        const again = await pool.query<{ prefix: string }>('SELECT prefix FROM public_copies WHERE prefix = ANY($1)', [orphans]);
        const still = new Set(again.rows.map((r) => r.prefix));
        const gone = orphans.filter((p) => !still.has(p));
        if (gone.length > 0) await pool.query('INSERT INTO object_deletions (key) SELECT unnest($1::text[]) ON CONFLICT (key) DO NOTHING', [gone]);
        removed += gone.length;
      }
      if (high !== undefined) low = high;
    };
    let listed = new Map<string, Set<string>>();
    let last: string | undefined;
    for await (const item of storage.client.listObjectsV2(storage.bucket, PUBLIC_PREFIX, true)) {
      const key = (item as { name?: string }).name;
      if (!key) continue;
      const parts = key.split('/');
      // public/<group>/<asset>/<token>/<file...>; anything else under the prefix is nobody's (removed as itself).
      const prefix = parts.length >= 5 ? `${parts.slice(0, 4).join('/')}/` : key;
      if (prefix !== last && listed.size >= 1000) {
        await check(listed, last);
        listed = new Map();
      }
      if (!listed.has(prefix)) listed.set(prefix, new Set());
      listed.get(prefix)!.add(parts.slice(4).join('/'));
      last = prefix;
    }
    await check(listed, undefined);
    return { removed, recopied };
  };

  return async (asset) => {
    if (asset) {
      const { rows } = await pool.query<{ prefix: string }>('SELECT prefix FROM public_copies WHERE group_id = $1 AND asset_id = $2 AND copied_at IS NULL', [
        asset.groupId,
        asset.assetId,
      ]);
      for (const { prefix } of rows) {
        const done = await copyOne(prefix, false);
        if (done.outcome === 'failed') throw done.error;
      }
      await ensurePolicy();
      return rows.length;
    }
    let copied = 0;
    for (;;) {
      const { rows } = await pool.query<{ prefix: string }>(
        `SELECT prefix FROM public_copies WHERE copied_at IS NULL AND (attempted_at IS NULL OR attempted_at < now() - interval '${RETRY_AFTER}')
         ORDER BY attempted_at NULLS FIRST LIMIT 100`,
      );
      let progress = 0;
      for (const { prefix } of rows) {
        const done = await copyOne(prefix, true);
        if (done.outcome === 'copied') progress += 1;
        else if (done.outcome === 'failed') options.logger?.error({ err: done.error, prefix }, 'public copy failed; tried again later');
      }
      copied += progress;
      if (rows.length < 100 || progress === 0) break;
    }
    await ensurePolicy();
    if (lastSweep === undefined || Date.now() - lastSweep >= sweepEveryMs) {
      lastSweep = Date.now();
      const swept = await sweep();
      if (swept.removed + swept.recopied > 0) options.logger?.warn(swept, 'public prefix swept: folders no key names removed, missing copies made again');
    }
    return copied;
  };
}
