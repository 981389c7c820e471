import { createPool, type Pool } from '@dam/db';
import { createDatabase, scaled } from '@dam/testing';
import { pgPendingJournal } from '../src/adapters/pending-upload.journal';
import type { PendingJournal, PendingUpload } from '../src/domain/ports';
import { migrateUpload } from '../src/migrations';

let pool: Pool;
let journal: PendingJournal;

beforeAll(async () => {
  // As the service holds it: its own database, migrated as it migrates it at start.
  pool = createPool(await createDatabase('pending_journal'));
  expect(await migrateUpload(pool)).toEqual(['001_idempotency_keys.sql', '002_pending_uploads.sql', '003_tus_locks.sql']);
  journal = pgPendingJournal(pool, { refreshMs: 3_600_000, onError: () => undefined });
}, scaled(60_000));

afterAll(async () => {
  await pool?.end();
});

const upload = (i: number): PendingUpload => ({
  object_key: `1/asset-${i}/original`,
  group_id: 1,
  user_id: 2,
  role_id: 1,
  role_name: 'ADMIN',
  started_at: new Date().toISOString(),
});
const rows = async (): Promise<number> => (await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM pending_uploads')).rows[0]?.n ?? -1;

describe('the pending-upload journal (PostgreSQL)', () => {
  it('lists stale entries a batch at a time, and finished uploads leave nothing behind', async () => {
    const count = 2500;
    const handles = [];
    for (let i = 0; i < count; i += 250) {
      handles.push(...(await Promise.all(Array.from({ length: Math.min(250, count - i) }, (_, j) => journal.open(`asset-${i + j}`, upload(i + j))))));
    }
    expect(await rows()).toBe(count);
    // A pass takes the oldest thousand; the next pass the next ones.
    const listed = await journal.stale(-60_000);
    expect(listed).toHaveLength(1000);
    expect(new Set(listed.map((e) => e.id)).size).toBe(1000);
    expect(listed.find((e) => e.id === 'asset-17')?.upload).toEqual({ ...upload(17), started_at: expect.any(String) as unknown });

    // The requests finish: each entry goes.
    await Promise.all(handles.slice(0, count - 1).map((h) => h.close()));
    expect(await rows()).toBe(1);
    const left = await journal.stale(-60_000);
    expect(left.map((e) => e.id)).toEqual([`asset-${count - 1}`]);

    // The reaper's removal checks the revision.
    expect(await journal.remove(left[0]!.id, left[0]!.revision + 1000)).toBe(false);
    expect(await journal.remove(left[0]!.id, left[0]!.revision)).toBe(true);
    expect(await rows()).toBe(0);
    handles[count - 1]!.abandon();
  });

  it('counts an entry stale only once it was not written for the grace period; a refresh keeps it from the reaper', async () => {
    const grace = scaled(1000);
    const refreshing = pgPendingJournal(pool, { refreshMs: Math.floor(grace / 4), onError: () => undefined });
    const live = await refreshing.open('live', upload(1));
    const dead = await journal.open('dead', upload(2));
    dead.abandon();
    expect((await journal.stale(grace)).map((e) => e.id)).toEqual([]);
    await new Promise((r) => setTimeout(r, grace + 200));
    const stale = await journal.stale(grace);
    expect(stale.map((e) => e.id)).toEqual(['dead']);
    // The reaper saw 'dead' at its revision; a request writing its entry again meanwhile keeps it.
    await journal.open('dead', upload(2)).then((h) => h.abandon());
    expect(await journal.remove('dead', stale[0]!.revision)).toBe(false);
    await live.close();
    await pool.query('DELETE FROM pending_uploads');
  });

  it('fails open when the database cannot be reached (the upload answers 503 before storing anything)', async () => {
    const gone = createPool('postgres://postgres@127.0.0.1:1/none', { connectionTimeoutMillis: 1000 });
    try {
      await expect(pgPendingJournal(gone, { refreshMs: 60_000, onError: () => undefined }).open('x', upload(3))).rejects.toThrow();
    } finally {
      await gone.end();
    }
  });
});
