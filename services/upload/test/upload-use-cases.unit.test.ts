import type { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import type { Principal } from '@dam/auth-tokens';
import { unavailable } from '@dam/errors';
import { HostRateLimiter } from '@dam/http';
import { createLogger } from '@dam/logging';
import { ObjectNotFoundError, type Storage } from '@dam/storage';
import { IngestFailure, type IngestConfig } from '../src/domain/ingest';
import type { MetadataClient, OrphanObjects, PendingHandle, PendingJournal, PendingUpload, StalePending, StoredFile } from '../src/domain/ports';
import { RegistrationUnknown } from '../src/domain/upload.errors';
import { downloadOriginal } from '../src/use-cases/download-original.use-case';
import { finishResumableUpload } from '../src/use-cases/finish-resumable.use-case';
import { reapOrphans } from '../src/use-cases/reap-orphans.use-case';
import { replaceAsset } from '../src/use-cases/replace-asset.use-case';
import { uploadAssets, type UploadDeps } from '../src/use-cases/upload-assets.use-case';

/** The upload use cases over in-memory ports: no S3, NATS or metadata. */

const logger = createLogger({ service: 'upload-use-cases-test', level: 'silent' });
const principal: Principal = { user_id: 5, group_id: 7, role_id: 1, role_name: 'ADMIN', permissions: [], via: 'jwt' };
const ASSET = 'A'.repeat(32);

/** The few object-store calls the use cases make, on a Map (storeOriginal writes with putBuffer or putStream). */
function memoryStorage(initial: Record<string, string> = {}) {
  const objects = new Map<string, Buffer>(Object.entries(initial).map(([k, v]) => [k, Buffer.from(v)]));
  const drain = async (body: Readable) => {
    const chunks: Buffer[] = [];
    for await (const chunk of body) chunks.push(Buffer.from(chunk as Buffer));
    return Buffer.concat(chunks);
  };
  const storage = {
    bucket: 'assets',
    putBuffer: async (key: string, body: Buffer) => (objects.set(key, body), { etag: 'e' }),
    putStream: async (key: string, body: Readable) => (objects.set(key, await drain(body)), { etag: 'e' }),
    getStream: async (key: string) => {
      const body = objects.get(key);
      if (!body) throw new ObjectNotFoundError(key);
      return Readable.from([body]);
    },
    remove: async (key: string) => void objects.delete(key),
  };
  return { storage: storage as unknown as Storage, objects };
}

/** The journal's entries by id, and what became of each handle. */
function memoryJournal() {
  const entries = new Map<string, { upload: PendingUpload; state: 'open' | 'closed' | 'abandoned' }>();
  const journal: PendingJournal = {
    async open(id, upload) {
      const entry = { upload, state: 'open' as 'open' | 'closed' | 'abandoned' };
      entries.set(id, entry);
      const handle: PendingHandle = {
        close: async () => void ((entry.state = 'closed'), entries.delete(id)),
        abandon: () => void (entry.state = 'abandoned'),
      };
      return handle;
    },
    stale: async () => [],
    remove: async (id) => entries.delete(id),
  };
  return { journal, entries };
}

function metadataThat(register: () => Promise<never> | Promise<Array<{ id: string; status: string }>>): MetadataClient & { registered: StoredFile[] } {
  const registered: StoredFile[] = [];
  return {
    registered,
    createAssets: async (_p, files) => (registered.push(...files), register()),
    replaceOriginal: async () => register().then(() => ({ id: ASSET, status: 'NOT_READY' })),
    checkReplaceable: async () => undefined,
    existingAssets: async () => [],
    liveKeys: async () => [],
    startIngest: async () => ({ id: ASSET, status: 'QUEUED', message: '' }),
  };
}

const lost = () => Promise.reject(new RegistrationUnknown('UNAVAILABLE', 'METADATA_UNAVAILABLE', 'no answer'));
const refused = () => Promise.reject(unavailable('The metadata service answered 500', 'METADATA_UNAVAILABLE'));
const created = () => Promise.resolve([{ id: ASSET, status: 'NOT_READY' }]);

function depsWith(metadata: MetadataClient, storage: Storage, journal: PendingJournal): UploadDeps {
  return { storage, metadata, journal, maxUploadBytes: 1024 * 1024, logger };
}

/** A multipart request as receiveMultipart reads one. */
function multipart(files: Array<{ name: string; body: string }>): IncomingMessage {
  const boundary = 'unit-boundary';
  const parts = files.map(
    (f) => `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${f.name}"\r\nContent-Type: text/plain\r\n\r\n${f.body}\r\n`,
  );
  const req = Readable.from([Buffer.from(`${parts.join('')}--${boundary}--\r\n`)]) as unknown as IncomingMessage;
  req.headers = { 'content-type': `multipart/form-data; boundary=${boundary}` };
  // As a socket's request: complete once every byte was read (before its 'close').
  req.once('end', () => (req.complete = true));
  return req;
}

describe('a registration whose answer was lost (RegistrationUnknown)', () => {
  it('Upload Asset keeps the objects and their journal entries for the reaper to decide', async () => {
    const { storage, objects } = memoryStorage();
    const { journal, entries } = memoryJournal();
    const metadata = metadataThat(lost);
    const error = await uploadAssets(
      depsWith(metadata, storage, journal),
      principal,
      multipart([
        { name: 'a.txt', body: 'aaa' },
        { name: 'b.txt', body: 'bbb' },
      ]),
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RegistrationUnknown);
    expect(metadata.registered).toHaveLength(2);
    expect(objects.size).toBe(2);
    expect([...entries.values()].map((e) => e.state)).toEqual(['abandoned', 'abandoned']);
    expect([...entries.values()].map((e) => e.upload.object_key).sort()).toEqual([...objects.keys()].sort());
  });

  it('Upload Asset removes its objects and forgets their entries when metadata answered a refusal', async () => {
    const { storage, objects } = memoryStorage();
    const { journal, entries } = memoryJournal();
    await expect(uploadAssets(depsWith(metadataThat(refused), storage, journal), principal, multipart([{ name: 'a.txt', body: 'aaa' }]))).rejects.toMatchObject(
      {
        code: 'METADATA_UNAVAILABLE',
      },
    );
    expect(objects.size).toBe(0);
    expect(entries.size).toBe(0);
  });

  it('Replace keeps the new object and its entry; a refusal removes them', async () => {
    for (const [register, kept] of [
      [lost, true],
      [refused, false],
    ] as const) {
      const { storage, objects } = memoryStorage();
      const { journal, entries } = memoryJournal();
      await expect(
        replaceAsset(depsWith(metadataThat(register), storage, journal), principal, ASSET, multipart([{ name: 'n.txt', body: 'new' }])),
      ).rejects.toBeDefined();
      expect(objects.size).toBe(kept ? 1 : 0);
      expect([...entries.values()].map((e) => e.state)).toEqual(kept ? ['abandoned'] : []);
    }
  });

  it("the end of a resumable upload keeps the asset's object and entry too; a registered one forgets its entry", async () => {
    const { storage, objects } = memoryStorage({ 'tus/u1': 'resumable bytes' });
    const { journal, entries } = memoryJournal();
    const upload = { key: 'tus/u1', name: 'r.txt', customMetadata: undefined };
    await expect(finishResumableUpload(depsWith(metadataThat(lost), storage, journal), principal, upload)).rejects.toBeInstanceOf(RegistrationUnknown);
    const [kept] = [...entries.values()];
    expect(kept?.state).toBe('abandoned');
    expect(objects.has(kept?.upload.object_key ?? '')).toBe(true);

    const done = memoryJournal();
    const file = await finishResumableUpload(depsWith(metadataThat(created), storage, done.journal), principal, upload);
    expect(file).toMatchObject({ name: 'r.txt', size: 'resumable bytes'.length, status: 'NOT_READY' });
    expect(done.entries.size).toBe(0);
  });
});

describe('reapOrphans', () => {
  const upload = (key: string, group = 7): PendingUpload => ({
    object_key: key,
    group_id: group,
    user_id: 5,
    role_id: 1,
    role_name: 'ADMIN',
    started_at: '2026-01-01T00:00:00Z',
  });
  const stale = (id: string, key: string, group = 7): StalePending => ({ id, upload: upload(key, group), revision: 1 });

  function world(entries: StalePending[], metadata: Partial<Pick<MetadataClient, 'existingAssets' | 'liveKeys'>>) {
    const calls: string[] = [];
    const removedEntries: string[] = [];
    const objects: OrphanObjects = {
      abortIncompleteUploads: async (key) => void calls.push(`abort ${key}`),
      remove: async (key) => void calls.push(`remove ${key}`),
    };
    const journal: PendingJournal = {
      open: () => Promise.reject(new Error('not used')),
      stale: async () => entries,
      remove: async (id) => (removedEntries.push(id), true),
    };
    const run = () =>
      reapOrphans({
        journal,
        objects,
        metadata: { existingAssets: metadata.existingAssets ?? (async () => []), liveKeys: metadata.liveKeys ?? (async () => []) },
        logger,
        graceMs: 0,
      });
    return { run, calls, removedEntries };
  }

  it('removes the objects metadata does not know and keeps the registered ones; every entry goes', async () => {
    const known = 'K'.repeat(32);
    const orphan = 'O'.repeat(32);
    const w = world(
      [
        stale(known, `originals/7/${known}`),
        stale(orphan, `originals/7/${orphan}`),
        stale(`${known}-aa`, `originals/7/${known}-aa`),
        stale(`${known}-bb`, `originals/7/${known}-bb`),
      ],
      { existingAssets: async (_p, ids) => ids.filter((id) => id === known), liveKeys: async (_p, _ids, keys) => keys.filter((k) => k.endsWith('-aa')) },
    );
    expect(await w.run()).toBe(2);
    // The incomplete multipart upload goes before the object, so no part is added after the removal.
    expect(w.calls).toEqual([`abort originals/7/${orphan}`, `remove originals/7/${orphan}`, `abort originals/7/${known}-bb`, `remove originals/7/${known}-bb`]);
    expect(w.removedEntries.sort()).toEqual([known, `${known}-aa`, `${known}-bb`, orphan].sort());
  });

  it("asks metadata about a replacement by its asset id, and one group's failure leaves the others reaped", async () => {
    const asked: string[][] = [];
    const a = 'A'.repeat(32);
    const b = 'B'.repeat(32);
    const w = world([stale(`${a}-cc`, `originals/7/${a}-cc`, 7), stale(b, `originals/8/${b}`, 8)], {
      liveKeys: async (_p, ids) => (asked.push(ids), Promise.reject(new Error('metadata down'))),
    });
    expect(await w.run()).toBe(1);
    expect(asked).toEqual([[a]]);
    // Group 7's entry stays for the next pass; group 8's orphan is gone.
    expect(w.removedEntries).toEqual([b]);
    expect(w.calls).toEqual([`abort originals/8/${b}`, `remove originals/8/${b}`]);
  });
});

describe('downloadOriginal from another bucket', () => {
  const cfg = (sources?: IngestConfig['s3Sources']): IngestConfig => ({
    allowHosts: [],
    s3Buckets: ['inbox'],
    ...(sources ? { s3Sources: sources } : {}),
    maxBytes: 10,
    connectTimeoutMs: 1000,
    idleTimeoutMs: 1000,
    rateLimiter: new HostRateLimiter(60, 10),
  });
  const target = (source: string) => ({ groupId: '7', assetId: ASSET, source });

  it("reads the source through the port and stores it as the asset's original", async () => {
    const { storage, objects } = memoryStorage();
    const sources = { size: async () => 5, read: async () => Readable.from([Buffer.from('hello')]) };
    const stored = await downloadOriginal(storage, cfg(sources), 'assets', target('s3://inbox/in/a.txt'), () => undefined);
    expect(stored.size).toBe(5);
    expect(objects.get(stored.objectKey)?.toString()).toBe('hello');
  });

  it('fails the job for a missing, too large or unreadable source', async () => {
    const { storage } = memoryStorage();
    const missing = { size: () => Promise.reject(new ObjectNotFoundError('inbox/x')), read: async () => Readable.from([]) };
    const large = { size: async () => 11, read: async () => Readable.from([]) };
    await expect(downloadOriginal(storage, cfg(missing), 'assets', target('s3://inbox/x'), () => undefined)).rejects.toThrow(
      new IngestFailure('s3://inbox/x does not exist'),
    );
    await expect(downloadOriginal(storage, cfg(large), 'assets', target('s3://inbox/x'), () => undefined)).rejects.toThrow(/11 bytes, larger than 10/);
    await expect(downloadOriginal(storage, cfg(), 'assets', target('s3://inbox/x'), () => undefined)).rejects.toBeInstanceOf(IngestFailure);
  });
});
