import { randomBytes } from 'node:crypto';
import { request as httpRequest, type ClientRequest } from 'node:http';
import { signJwt } from '@dam/auth-tokens';
import { scaled, type ServiceProcess } from '@dam/testing';
import { startUploadFixtures, type UploadFixtures } from './harness';

const JWT_SECRET = 'jwt-secret-for-tus-slot-tests-0123456789abcdef';
const MiB = 1024 * 1024;
const b64 = (s: string) => Buffer.from(s).toString('base64');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The tus store's part slots (TUS_PARTS_IN_FLIGHT: parts being filled or sent to S3 at once in a process). A PATCH
 * that waits for a slot and whose client goes away must not keep the slot it is given later: with @tus/s3-store
 * 2.0.7's own uploadParts each such PATCH took one slot for good, and once all were gone every PATCH of every
 * resumable upload of the process waited for ever. Here the process has one slot, so one lost slot is all of them.
 */
describe('tus part slots after aborted PATCHes', () => {
  let fx: UploadFixtures;
  let upload: ServiceProcess;
  const { token } = signJwt({ sub: 5, gid: 910, role: 1 }, JWT_SECRET, 3600);
  const headers = { authorization: `Bearer ${token}`, 'tus-resumable': '1.0.0' };

  beforeAll(async () => {
    fx = await startUploadFixtures('tus-slots');
    // A body silent for this long ends with 408 (the holder below sends every 200 ms).
    upload = await fx.startUpload(JWT_SECRET, { TUS_PARTS_IN_FLIGHT: '1', UPLOAD_IDLE_TIMEOUT_MS: String(scaled(1_500)) });
  }, scaled(120_000));
  afterAll(async () => {
    await fx?.stop();
  });

  const create = async (length: number): Promise<string> => {
    const res = await fetch(`${upload.url}/api/v1/uploads/tus`, {
      method: 'POST',
      headers: { ...headers, 'upload-length': String(length), 'upload-metadata': `filename ${b64('slots.bin')}` },
    });
    expect(res.status).toBe(201);
    return new URL(res.headers.get('location') as string).pathname;
  };
  /** A PATCH whose body the test sends piece by piece; `answer` is its status (or the error of an aborted one). */
  function slowPatch(path: string, offset: number, length: number) {
    let req!: ClientRequest;
    const answer = new Promise<number>((resolve, reject) => {
      req = httpRequest(`${upload.url}${path}`, {
        method: 'PATCH',
        headers: { ...headers, 'upload-offset': String(offset), 'content-type': 'application/offset+octet-stream', 'content-length': String(length) },
      });
      req.on('response', (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.on('error', reject);
    });
    answer.catch(() => undefined);
    return { req, answer };
  }

  it('gives its slot back when a PATCH waiting for one is cut (client gone, body stalled): a later upload still proceeds', async () => {
    // The one slot, held by a PATCH whose client trickles its part in, never filling it, until the test says.
    const holderLength = 4 * MiB;
    const holderPath = await create(holderLength);
    const holder = slowPatch(holderPath, 0, holderLength);
    let trickled = 0;
    const trickle = setInterval(() => {
      holder.req.write(randomBytes(8 * 1024));
      trickled += 8 * 1024;
    }, 200);
    let gonePath = '';
    try {
      await sleep(scaled(500));
      // A PATCH of another upload waits for the slot, and its client goes away mid-body.
      gonePath = await create(MiB);
      const gone = slowPatch(gonePath, 0, MiB);
      gone.req.write(randomBytes(1024));
      await sleep(scaled(500));
      gone.req.destroy();
      // Another one waits for the slot and its client stops sending: the idle timeout ends it (408).
      const stalled = slowPatch(await create(MiB), 0, MiB);
      stalled.req.write(randomBytes(1024));
      expect(await stalled.answer).toBe(408);
    } finally {
      clearInterval(trickle);
    }
    // The holder finishes: its part goes to S3 and its slot is free again.
    holder.req.end(randomBytes(holderLength - trickled));
    expect(await holder.answer).toBe(204);

    // A new upload's PATCH gets the slot. Before, the cut PATCHes were given the slot once free and kept it for good
    // (the first one waiting for the rest of its body for ever, the stalled one by @tus/s3-store's uploadParts), and
    // this one waited for ever.
    const bytes = randomBytes(100 * 1024);
    const later = fetch(`${upload.url}${await create(bytes.length)}`, {
      method: 'PATCH',
      headers: { ...headers, 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' },
      body: bytes,
      signal: AbortSignal.timeout(scaled(20_000)),
    }).then((res) => res.status);
    expect(await later.catch((error: unknown) => String(error))).toBe(204);
    // The bytes the gone client sent before it went are kept, as tus servers keep them (HEAD tells the offset).
    const head = await fetch(`${upload.url}${gonePath}`, { method: 'HEAD', headers, signal: AbortSignal.timeout(scaled(20_000)) });
    expect([head.status, head.headers.get('upload-offset')]).toEqual([200, '1024']);
  });
});
