import { createHash, randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { originalKey, replacementKey } from '@dam/storage';
import { identities, principal, registerAsset, signedFetch, startMetadata, assetId, type Harness } from './harness';

let h: Harness;
beforeAll(async () => {
  h = await startMetadata();
});
afterAll(async () => {
  await h?.stop();
});

const GROUP = 21;
const admin = principal({ group_id: GROUP, user_id: 1 });
const md5 = (b: Buffer) => createHash('md5').update(b).digest('hex');

/** A GET that reads its first chunk, then waits for `between` before reading the rest. */
function pausedDownload(path: string, between: () => Promise<void>): Promise<{ status: number; etag: string | undefined; body: Buffer }> {
  const headers = identities.headers('gateway', { audience: 'metadata', method: 'GET', path, principal: admin });
  return new Promise((resolve, reject) => {
    const req = request(`${h.url}${path}`, { headers: headers as Record<string, string> }, (res) => {
      const chunks: Buffer[] = [];
      let paused = false;
      res.on('data', (c: Buffer) => {
        chunks.push(c);
        if (paused) return;
        paused = true;
        res.pause();
        between().then(() => res.resume(), reject);
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, etag: res.headers.etag, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

describe('Replace while a download runs', () => {
  it('gives a download that began before the replace the old bytes, whole, and the next one the new bytes', async () => {
    const id = assetId();
    const old = randomBytes(4 * 1024 * 1024);
    const fresh = randomBytes(3 * 1024 * 1024);
    await h.storage.putBuffer(originalKey(String(GROUP), id), old, { contentType: 'application/octet-stream' });
    await registerAsset(h, admin, { id, name: 'big.bin', size: old.length, checksum: md5(old), contentType: 'application/octet-stream' });

    const path = `/api/v1/assets/${id}/content/original/download`;
    const during = await pausedDownload(path, async () => {
      // The replace completes while the first download is half read.
      const key = replacementKey(String(GROUP), id, 'abcdef0123456789');
      await h.storage.putBuffer(key, fresh, { contentType: 'application/octet-stream' });
      const res = await signedFetch(`${h.url}/internal/v1/assets/${id}/original`, admin, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          name: 'big-2.bin',
          size: fresh.length,
          checksum: md5(fresh),
          content_type: 'application/octet-stream',
          object_key: key,
          metadata: {},
        }),
      });
      expect(res.status).toBe(200);
    });
    expect(during.status).toBe(200);
    expect(during.etag).toBe(`"${md5(old)}"`);
    expect(md5(during.body)).toBe(md5(old));

    const after = await signedFetch(`${h.url}${path}`, admin);
    expect(after.headers.get('etag')).toBe(`"${md5(fresh)}"`);
    expect(md5(Buffer.from(await after.arrayBuffer()))).toBe(md5(fresh));
    // A client resuming the old download with If-Range gets the whole new file, never old and new bytes mixed.
    const resumed = await signedFetch(`${h.url}${path}`, admin, { headers: { range: 'bytes=1000-', 'if-range': `"${md5(old)}"` } });
    expect(resumed.status).toBe(200);
    expect(md5(Buffer.from(await resumed.arrayBuffer()))).toBe(md5(fresh));
    // The old original stays for downloads still streaming it: queued for deletion after the grace period.
    const queued = await h.pool.query('SELECT key, not_before > now() AS later FROM object_deletions WHERE key = $1', [originalKey(String(GROUP), id)]);
    expect(queued.rows).toEqual([{ key: originalKey(String(GROUP), id), later: true }]);
  });
});
