import { createServer, request } from 'node:http';
import { signJwt } from '@dam/auth-tokens';
import { listen, scaled, waitFor } from '@dam/testing';
import type { PendingJournal } from '../src/domain/ports';
import { incompleteUploads, objectsUnder, startUploadFixtures, type UploadFixtures } from './harness';

const JWT_SECRET = 'jwt-secret-for-crash-tests-0123456789';
const UPLOAD_PATH = '/api/v1/assets/new/content/original/upload';
const MiB = 1024 * 1024;

let fx: UploadFixtures;
let bucket: string;
let journal: PendingJournal;

beforeAll(async () => {
  fx = await startUploadFixtures('upload-crash');
  ({ bucket, journal } = fx);
}, scaled(120_000));

// Each test's upload processes go with it: a reaper left running from an earlier test (a shorter grace, metadata
// reached directly) would race the next test's own and could take an entry of a request still in flight.
afterEach(async () => fx?.stopUploads());
afterAll(async () => {
  await fx?.stop();
});

const bearer = (gid: number) => `Bearer ${signJwt({ sub: 9, gid, role: 1 }, JWT_SECRET, 600).token}`;

const pendingIds = async (): Promise<string[]> => (await journal.stale(-60_000)).map((e) => e.id);

describe('crash safety of uploads', () => {
  it(
    'removes the objects and the incomplete multipart upload of a request whose process was killed',
    async () => {
      const first = await fx.startUpload(JWT_SECRET);
      const gid = 701;
      const prefix = `originals/${gid}/`;
      const boundary = 'crash-boundary';
      const req = request(`${first.url}${UPLOAD_PATH}`, {
        method: 'POST',
        headers: { authorization: bearer(gid), 'content-type': `multipart/form-data; boundary=${boundary}` },
      });
      // The process dies under the request: the socket error is expected.
      req.on('error', () => undefined);
      req.write(
        `--${boundary}\r\nContent-Disposition: form-data; name="a"; filename="small.txt"\r\n\r\nsmall file\r\n` +
          `--${boundary}\r\nContent-Disposition: form-data; name="b"; filename="big.bin"\r\n\r\n`,
      );
      // Past the 1 MiB sniffing head and a 5 MiB S3 part, so a multipart upload is under way; then the body stalls.
      for (let i = 0; i < 8; i++) req.write(Buffer.alloc(MiB, 7));

      await waitFor(async () => (await objectsUnder(bucket, prefix)).length === 1 && (await incompleteUploads(bucket, prefix)).length === 1, {
        timeoutMs: 30_000,
        description: 'the small object stored and the big one in a multipart upload',
      });
      const pending = await pendingIds();
      expect(pending).toHaveLength(2);
      const keys = [...(await objectsUnder(bucket, prefix)), ...(await incompleteUploads(bucket, prefix))];
      expect(keys.sort()).toEqual(pending.map((id) => `${prefix}${id}`).sort());

      first.kill('SIGKILL');
      await first.exited;
      req.destroy();
      // Nothing cleans up by itself: the dead process could not.
      expect(await objectsUnder(bucket, prefix)).toHaveLength(1);

      await fx.startUpload(JWT_SECRET, { ORPHAN_GRACE_MS: '1000', ORPHAN_REAP_INTERVAL_MS: '300' });
      await waitFor(async () => (await pendingIds()).length === 0, { timeoutMs: 30_000, description: 'the pending entries reaped' });
      expect(await objectsUnder(bucket, prefix)).toEqual([]);
      expect(await incompleteUploads(bucket, prefix)).toEqual([]);
    },
    scaled(90_000),
  );

  it(
    'keeps the object of a registered asset and only drops its left-over entry',
    async () => {
      // The grace must outlast the upload and the two entries written below until they are listed: scaled with the machine.
      const upload = await fx.startUpload(JWT_SECRET, { ORPHAN_GRACE_MS: String(scaled(1000)), ORPHAN_REAP_INTERVAL_MS: '300' });
      const gid = 702;
      const form = new FormData();
      form.append('file', new Blob([Buffer.from('registered content')]), 'kept.txt');
      const res = await fetch(`${upload.url}${UPLOAD_PATH}`, { method: 'POST', headers: { authorization: bearer(gid) }, body: form });
      expect(res.status).toBe(200);
      const [file] = ((await res.json()) as { files: Array<{ id: string }> }).files;
      const id = (file as { id: string }).id;
      const key = `originals/${gid}/${id}`;

      // As if the process died between metadata's answer and forgetting the entry.
      const base = { group_id: gid, user_id: 9, role_id: 1, role_name: 'ADMIN', started_at: new Date().toISOString() };
      (await journal.open(id, { ...base, object_key: key })).abandon();
      // An unregistered id whose object was never written: the entry goes, nothing fails.
      const ghost = 'G'.repeat(32);
      (await journal.open(ghost, { ...base, object_key: `originals/${gid}/${ghost}` })).abandon();
      expect((await pendingIds()).sort()).toEqual([ghost, id].sort());

      await waitFor(async () => (await pendingIds()).length === 0, { timeoutMs: 30_000, description: 'the left-over entries reaped' });
      expect(await objectsUnder(bucket, `originals/${gid}/`)).toEqual([key]);
    },
    scaled(60_000),
  );

  it(
    'leaves the objects of a registration whose answer was lost to the reaper, which keeps what metadata registered',
    async () => {
      // Between upload and metadata: registrations of group `lostAnswer` reach metadata and its answer is cut (metadata
      // killed after its commit); those of group `lostRequest` are cut before metadata sees them. Every other call passes.
      const lostAnswer = 703;
      const lostRequest = 704;
      const target = new URL(fx.metadata.url);
      const proxy = createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => {
          const body = Buffer.concat(chunks);
          const registration = req.method === 'POST' && req.url === '/internal/v1/assets';
          const group = registration ? /"object_key":"originals\/(\d+)\//.exec(body.toString())?.[1] : undefined;
          if (group === String(lostRequest)) {
            req.socket.destroy();
            return;
          }
          const upstream = request({ host: target.hostname, port: target.port, path: req.url, method: req.method, headers: req.headers }, (answer) => {
            if (group === String(lostAnswer)) {
              answer.resume();
              answer.on('end', () => req.socket.destroy());
              return;
            }
            res.writeHead(answer.statusCode ?? 502, answer.headers);
            answer.pipe(res);
          });
          upstream.on('error', () => req.socket.destroy());
          upstream.end(body);
        });
      });
      const proxyUrl = await listen(proxy);
      try {
        // The grace must outlast both failed uploads and the listings after them ("nothing is removed at once"):
        // scaled with the machine.
        const upload = await fx.startUpload(JWT_SECRET, { METADATA_URL: proxyUrl, ORPHAN_GRACE_MS: String(scaled(1500)), ORPHAN_REAP_INTERVAL_MS: '300' });
        const send = async (gid: number) => {
          const form = new FormData();
          form.append('file', new Blob([Buffer.from(`content of group ${gid}`)]), 'cut.txt');
          const res = await fetch(`${upload.url}${UPLOAD_PATH}`, { method: 'POST', headers: { authorization: bearer(gid) }, body: form });
          return { status: res.status, body: (await res.json()) as { error?: { code?: string } } };
        };
        // The client sees the failure either way.
        expect(await send(lostAnswer)).toMatchObject({ status: 503, body: { error: { code: 'METADATA_UNAVAILABLE' } } });
        expect(await send(lostRequest)).toMatchObject({ status: 503, body: { error: { code: 'METADATA_UNAVAILABLE' } } });
        // Nothing is removed at once: metadata may have the asset.
        const [registered] = await objectsUnder(bucket, `originals/${lostAnswer}/`);
        expect(registered).toBeDefined();
        expect(await objectsUnder(bucket, `originals/${lostRequest}/`)).toHaveLength(1);

        await waitFor(async () => (await pendingIds()).length === 0, { timeoutMs: 30_000, description: 'the entries reaped' });
        // The asset metadata registered keeps its original; the one it never saw leaves nothing behind.
        expect(await objectsUnder(bucket, `originals/${lostAnswer}/`)).toEqual([registered]);
        const left = await objectsUnder(bucket, `originals/${lostRequest}/`);
        // On a failure, the upload's log tells which pass removed what (its warnings: the reaper's removals).
        expect({ left, log: left.length > 0 ? upload.logs().slice(-20) : [] }).toEqual({ left: [], log: [] });
      } finally {
        proxy.closeAllConnections();
        await new Promise((r) => proxy.close(r));
      }
    },
    scaled(90_000),
  );
});
