import { createHash, randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { createBucket, testS3Config } from '@dam/testing';
import { conversionKey, createStorage, ObjectNotFoundError, originalKey, publicPrefixPolicy, type Storage } from '../src';

async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** Streams the buffer in 64 KiB pieces so the client cannot see its length up front. */
function chunked(buffer: Buffer): Readable {
  let offset = 0;
  return new Readable({
    read() {
      this.push(offset < buffer.length ? buffer.subarray(offset, (offset += 65536)) : null);
    },
  });
}

const md5 = (b: Buffer) => createHash('md5').update(b).digest('hex');

describe('storage against the S3 server', () => {
  let storage: Storage;
  const big = randomBytes(20 * 1024 * 1024);
  const key = originalKey('g1', 'asset1');

  beforeAll(async () => {
    storage = createStorage({ ...testS3Config(await createBucket('storage')), partSize: 5 * 1024 * 1024 });
    await storage.ensureBucket();
    await storage.ensureBucket(); // idempotent
  });

  it('makes the public prefix anonymously readable with one constant statement, written only when it differs', async () => {
    const open = 'public/g1/a1/0123456789abcdef/file';
    const closed = originalKey('g1', 'private1');
    await storage.putBuffer(open, Buffer.from('open'), { contentType: 'text/plain' });
    await storage.putBuffer(closed, Buffer.from('closed'), { contentType: 'text/plain' });
    expect((await fetch(storage.publicUrl(open))).status).toBe(403);
    // An older install's policy (a list of objects) is replaced; the same policy again is not written.
    await storage.client.setBucketPolicy(storage.bucket, JSON.stringify(publicPrefixPolicy(storage.bucket, 'originals/g1/')));
    expect(await storage.publishPrefix('public/')).toBe(true);
    expect(await storage.publishPrefix('public/')).toBe(false);
    expect((await fetch(storage.publicUrl(open))).status).toBe(200);
    expect((await fetch(storage.publicUrl(closed))).status).toBe(403);
    // Neither the bucket nor the prefix can be listed anonymously.
    expect((await fetch(storage.publicUrl('public/').replace(/\/public\/$/, ''))).status).toBe(403);
    expect((await fetch(`${storage.publicUrl('x').replace(/\/x$/, '')}?prefix=public/`)).status).toBe(403);
  });

  it("copies server-side with new metadata (type, disposition) or the source's, also in parts past the single-copy limit", async () => {
    const html = originalKey('g1', 'html1');
    await storage.putBuffer(html, Buffer.from('<script>alert(1)</script>'), { contentType: 'text/html' });
    await storage.copy(html, 'public/g1/html1/t/a', { metadata: (s) => ({ contentType: s.contentType ?? '', contentDisposition: 'attachment' }) });
    await storage.copy(html, 'public/g1/html1/t/b');
    const a = await storage.client.statObject(storage.bucket, 'public/g1/html1/t/a');
    expect([a.metaData['content-type'], a.metaData['content-disposition']]).toEqual(['text/html', 'attachment']);
    const b = await storage.client.statObject(storage.bucket, 'public/g1/html1/t/b');
    expect([b.metaData['content-type'], b.metaData['content-disposition']]).toEqual(['text/html', undefined]);
    await expect(storage.copy(originalKey('g1', 'missing'), 'public/x')).rejects.toBeInstanceOf(ObjectNotFoundError);
    // 12 MiB copied in parts of 5 MiB (S3's smallest) when the single-copy limit is lowered.
    const parts = createStorage({ ...testS3Config(storage.bucket), maxSingleCopyBytes: 5 * 1024 * 1024 });
    const bytes = randomBytes(12 * 1024 * 1024);
    await storage.putBuffer(originalKey('g1', 'big1'), bytes, { contentType: 'video/mp4' });
    await parts.copy(originalKey('g1', 'big1'), 'public/g1/big1/t/v', { metadata: () => ({ contentType: 'video/mp4' }) });
    expect(md5(await storage.getBuffer('public/g1/big1/t/v'))).toBe(md5(bytes));
    expect((await storage.stat('public/g1/big1/t/v'))?.contentType).toBe('video/mp4');
  });

  it('answers ping', async () => {
    await expect(storage.ping()).resolves.toBeUndefined();
    const missing = createStorage({ ...testS3Config('no-such-bucket-dam'), partSize: 5 * 1024 * 1024 });
    await expect(missing.ping()).rejects.toThrow();
  });

  it('streams 20 MB of unknown length in and out, with an etag even for a multipart upload', async () => {
    const { etag } = await storage.putStream(key, chunked(big), { contentType: 'application/octet-stream' });
    expect(etag).not.toBe('');
    const back = await readAll(await storage.getStream(key));
    expect(back.length).toBe(big.length);
    expect(md5(back)).toBe(md5(big));
  });

  it('sends the parts of a long stream from at most three buffers, filled again once their part is stored (issue 33)', async () => {
    // Before, each part was a new Buffer.concat: a GiB of new memory outside the heap per GiB stored.
    const k = originalKey('g1', 'reused1');
    const long = randomBytes(8 * 5 * 1024 * 1024 + 4321);
    const blocks = new Set<ArrayBufferLike>();
    const sizes: number[] = [];
    const uploadPart = storage.client.uploadPart.bind(storage.client);
    const spy = jest.spyOn(storage.client, 'uploadPart').mockImplementation((config, payload) => {
      if (Buffer.isBuffer(payload)) {
        blocks.add(payload.buffer);
        sizes.push(payload.length);
      }
      return uploadPart(config, payload);
    });
    try {
      await storage.putStream(k, chunked(long), { contentType: 'application/octet-stream' });
    } finally {
      spy.mockRestore();
    }
    expect(sizes).toEqual([...Array(8).fill(5 * 1024 * 1024), 4321]);
    expect(blocks.size).toBeLessThanOrEqual(3);
    expect(md5(await readAll(await storage.getStream(k)))).toBe(md5(long));
  });

  it('stores a stream smaller than one part as one PUT, and an empty one', async () => {
    const small = randomBytes(300 * 1024);
    const k = originalKey('g1', 'small1');
    const { etag } = await storage.putStream(k, chunked(small), { contentType: 'application/octet-stream' });
    expect(etag).toBe(md5(small));
    expect(md5(await readAll(await storage.getStream(k)))).toBe(md5(small));
    const empty = originalKey('g1', 'empty1');
    await storage.putStream(empty, Readable.from([]), { contentType: 'application/octet-stream' });
    expect((await storage.stat(empty))?.size).toBe(0);
  });

  it('aborts a multipart upload whose source fails: no object, no open upload left', async () => {
    const k = originalKey('g1', 'broken1');
    let sent = 0;
    const failing = new Readable({
      read() {
        if (sent >= 12 * 1024 * 1024) {
          this.destroy(new Error('client went away'));
          return;
        }
        sent += 65536;
        this.push(randomBytes(65536));
      },
    });
    await expect(storage.putStream(k, failing, { contentType: 'application/octet-stream' })).rejects.toThrow('client went away');
    expect(await storage.stat(k)).toBeNull();
    const open: unknown[] = [];
    for await (const u of storage.client.listIncompleteUploads(storage.bucket, k, false)) open.push(u);
    expect(open).toEqual([]);
  });

  it('reads a byte range', async () => {
    const part = await readAll(await storage.getRange(key, 1000, 1999));
    expect(part.equals(big.subarray(1000, 2000))).toBe(true);
    const last = await readAll(await storage.getRange(key, big.length - 10, big.length - 1));
    expect(last.equals(big.subarray(big.length - 10))).toBe(true);
  });

  it('stats an object and answers null for a missing one', async () => {
    const stat = await storage.stat(key);
    expect(stat).toMatchObject({ size: big.length, contentType: 'application/octet-stream' });
    expect(stat?.lastModified).toBeInstanceOf(Date);
    expect(await storage.stat('originals/g1/missing')).toBeNull();
    await expect(storage.getStream('originals/g1/missing')).rejects.toBeInstanceOf(ObjectNotFoundError);
    await expect(storage.getBuffer('originals/g1/missing')).rejects.toBeInstanceOf(ObjectNotFoundError);
    await expect(storage.getRange('originals/g1/missing', 0, 1)).rejects.toBeInstanceOf(ObjectNotFoundError);
  });

  it('stores a buffer with its MD5 as etag and serves it through a presigned URL', async () => {
    const body = Buffer.from('hello world');
    const k = conversionKey('g1', 'asset1', md5(big), 'thumb', 'txt');
    expect(k).toBe(`conversions/g1/asset1/${md5(big)}/thumb.txt`);
    const { etag } = await storage.putBuffer(k, body, { contentType: 'text/plain' });
    expect(etag).toBe(md5(body));
    expect(await storage.getBuffer(k)).toEqual(body);
    const url = await storage.presignGet(k, 60, { responseContentDisposition: 'attachment; filename="a.txt"' });
    const res = await fetch(url);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-disposition')).toBe('attachment; filename="a.txt"');
    expect(await res.text()).toBe('hello world');
  });

  it('removes an object (twice is fine) and everything under a prefix', async () => {
    await storage.putBuffer('conversions/g2/a/c/x.jpg', Buffer.from('1'), { contentType: 'image/jpeg' });
    await storage.putBuffer('conversions/g2/a/c/y.jpg', Buffer.from('2'), { contentType: 'image/jpeg' });
    await storage.putBuffer('conversions/g2/b/c/z.jpg', Buffer.from('3'), { contentType: 'image/jpeg' });
    expect(await storage.removePrefix('conversions/g2/a/')).toBe(2);
    expect(await storage.stat('conversions/g2/a/c/x.jpg')).toBeNull();
    expect(await storage.stat('conversions/g2/b/c/z.jpg')).not.toBeNull();

    await storage.remove(key);
    await storage.remove(key);
    expect(await storage.stat(key)).toBeNull();
  });
});
