import { connectNats } from '@dam/events';
import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { scaled, startNats, type TestNats } from '@dam/testing';
import { natsPendingJournal, PENDING_BUCKET } from '../src/adapters/pending-upload.journal';
import type { PendingJournal, PendingUpload } from '../src/domain/ports';

let nats: TestNats;
let nc: NatsConnection;
let admin: NatsConnection;
let journal: PendingJournal;

beforeAll(async () => {
  nats = await startNats();
  // As the service holds it: the upload identity, whose NATS permissions are checked on every call.
  nc = await connectNats(nats.url, 'upload', nats.seed('upload'));
  admin = await connectNats(nats.url, 'pending-journal-test', nats.seed('admin'));
  journal = await natsPendingJournal(nc, { refreshMs: 3_600_000, onError: () => undefined });
}, scaled(60_000));

afterAll(async () => {
  await Promise.all([nc?.drain(), admin?.drain()]);
  await nats?.stop();
});

const upload = (i: number): PendingUpload => ({
  object_key: `1/asset-${i}/original`,
  group_id: 1,
  user_id: 2,
  role_id: 1,
  role_name: 'ADMIN',
  started_at: new Date().toISOString(),
});
const messagesInBucket = async (): Promise<number> => (await (await jetstreamManager(admin)).streams.info(`KV_${PENDING_BUCKET}`)).state.messages;

describe('the pending-upload journal', () => {
  it(
    'lists tens of thousands of entries as the upload identity, and finished uploads leave nothing in the bucket',
    async () => {
      // Enough entries that the listing (a push consumer) needs flow control: without the permission to answer it,
      // the listing stopped after the server's first window and the orphan reaper waited on it for good.
      const count = 18000;
      const handles = [];
      for (let i = 0; i < count; i += 200) {
        handles.push(...(await Promise.all(Array.from({ length: Math.min(200, count - i) }, (_, j) => journal.open(`asset-${i + j}`, upload(i + j))))));
      }
      expect(await messagesInBucket()).toBe(count);
      const listed = await journal.stale(-60_000);
      expect(listed).toHaveLength(count);
      expect(new Set(listed.map((e) => e.id)).size).toBe(count);
      expect(listed.find((e) => e.id === 'asset-17')?.upload.object_key).toBe('1/asset-17/original');

      // The requests finish: each entry goes, marker and all.
      for (let i = 0; i < count - 1; i += 500) await Promise.all(handles.slice(i, Math.min(i + 500, count - 1)).map((h) => h.close()));
      expect(await messagesInBucket()).toBe(1);
      const left = await journal.stale(-60_000);
      expect(left.map((e) => e.id)).toEqual([`asset-${count - 1}`]);

      // The reaper's removal checks the revision, then leaves no marker either.
      expect(await journal.remove(left[0]!.id, left[0]!.revision + 1000)).toBe(false);
      expect(await journal.remove(left[0]!.id, left[0]!.revision)).toBe(true);
      expect(await messagesInBucket()).toBe(0);
      expect(await journal.stale(-60_000)).toEqual([]);
      handles[count - 1]!.abandon();
    },
    scaled(120_000),
  );
});
