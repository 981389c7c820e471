import type { Pool } from '@dam/db';
import type { PendingJournal, PendingUpload, StalePending } from '../domain/ports';

/** Rows one reaper pass takes at most (the next pass takes the rest). */
const STALE_BATCH = 1000;

/**
 * The durable list of objects stored but not yet registered with metadata: upload's table pending_uploads (migration
 * 002), one row per asset id (a replacement's `<asset>-<token>`). It survives the upload process, so a restarted or
 * other replica can remove what a crash left behind. Each write takes a new revision from a sequence: the reaper
 * deletes a row only at the revision it saw, so an entry its request wrote again meanwhile stays. In upload's own
 * database, not NATS (issue 35): an upload needs no bus; the database down fails `open`, and the upload answers 503
 * before storing anything.
 */
export function pgPendingJournal(pool: Pick<Pool, 'query'>, opts: { refreshMs: number; onError(error: unknown, id: string): void }): PendingJournal {
  const write = (id: string, upload: PendingUpload) =>
    pool.query(
      `INSERT INTO pending_uploads (id, upload, revision, written_at) VALUES ($1, $2, nextval('pending_upload_revisions'), now())
       ON CONFLICT (id) DO UPDATE SET upload = EXCLUDED.upload, revision = EXCLUDED.revision, written_at = EXCLUDED.written_at`,
      [id, upload],
    );
  return {
    async open(id, upload) {
      await write(id, upload);
      const timer = setInterval(() => {
        write(id, upload).catch((error: unknown) => opts.onError(error, id));
      }, opts.refreshMs);
      timer.unref();
      return {
        async close() {
          clearInterval(timer);
          await pool.query('DELETE FROM pending_uploads WHERE id = $1', [id]).catch((error: unknown) => opts.onError(error, id));
        },
        abandon: () => clearInterval(timer),
      };
    },
    async stale(olderThanMs) {
      const { rows } = await pool.query<{ id: string; upload: PendingUpload; revision: string }>(
        `SELECT id, upload, revision FROM pending_uploads WHERE written_at <= now() - $1::double precision * interval '1 millisecond'
         ORDER BY written_at LIMIT $2`,
        [olderThanMs, STALE_BATCH],
      );
      return rows.map((r): StalePending => ({ id: r.id, upload: r.upload, revision: Number(r.revision) }));
    },
    async remove(id, revision) {
      const gone = await pool.query('DELETE FROM pending_uploads WHERE id = $1 AND revision = $2', [id, revision]);
      return gone.rowCount === 1;
    },
  };
}
