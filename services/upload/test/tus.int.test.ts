/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are untyped JSON; the assertions check them */
import { createHash, randomBytes } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { permissionsFor, signJwt, type Principal } from '@dam/auth-tokens';
import { createBucket, makePng, s3Env, scaled, startInternalStub, testMinioClient, waitFor, type InternalStub, type ServiceProcess } from '@dam/testing';
import * as tus from 'tus-js-client';
import { incompleteUploads, objectsUnder, startUploadFixtures, type UploadFixtures } from './harness';

const JWT_SECRET = 'jwt-secret-for-tus-tests-0123456789abcdef';
const UPLOAD_KEY = 'upk_test-upload-key-of-user-5';
const MiB = 1024 * 1024;

let fx: UploadFixtures;
let auth: InternalStub;
let upload: ServiceProcess;
let endpoint: string;

let nextGroup = 700;
/** Each test its own group; the upload key (answered by the auth stub) acts as user 5 of `keyGroup`. */
let keyGroup = 0;
function newCaller() {
  const gid = nextGroup++;
  const { token } = signJwt({ sub: 5, gid, role: 1 }, JWT_SECRET, 600);
  return { gid, headers: { authorization: `Bearer ${token}`, 'tus-resumable': '1.0.0' } };
}

/** The upload service as a process, authenticating through the auth stub (upload keys). */
const startUpload = (env: Record<string, string> = {}) =>
  fx.startUpload(JWT_SECRET, { AUTH_URL: auth.url, LOG_LEVEL: process.env.TUS_DEBUG ? 'info' : 'warn', ...env });

beforeAll(async () => {
  fx = await startUploadFixtures('tus');
  // auth: an upload key is checked on every request (POST /internal/v1/authenticate); JWT users are active.
  auth = await startInternalStub({
    identities: fx.identities,
    service: 'auth',
    callers: ['upload'],
    answer: (method, path) => {
      if (method === 'POST' && path === '/internal/v1/authenticate') {
        if (keyGroup === 0) return { status: 401 };
        const p: Principal = { user_id: 5, group_id: keyGroup, role_id: 1, role_name: 'ADMIN', permissions: ['CREATE_ASSET'], via: 'upload_key' };
        return { status: 200, body: p };
      }
      if (method === 'GET' && /^\/internal\/v1\/groups\/\d+\/users\/5\/status$/.test(path)) return { status: 200, body: { active: true, role_id: 1 } };
      return undefined;
    },
  });
  upload = await startUpload({ MAX_UPLOAD_BYTES: String(64 * MiB) });
  endpoint = `${upload.url}/api/v1/uploads/tus`;
}, scaled(120_000));

afterAll(async () => {
  if (process.env.TUS_DEBUG) console.log(upload.logs().slice(-60).join('\n'));
  await auth?.close();
  await fx?.stop();
});

const md5 = (b: Buffer) => createHash('md5').update(b).digest('hex');
const b64 = (s: string) => Buffer.from(s).toString('base64');

async function readObject(key: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of await testMinioClient().getObject(fx.bucket, key)) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}
async function assetData(gid: number, id: string): Promise<any> {
  const principal = { user_id: 5, group_id: gid, role_id: 1, role_name: 'ADMIN', permissions: permissionsFor('ADMIN'), via: 'jwt' as const };
  const path = `/api/v1/assets/${id}/data`;
  const res = await fetch(`${fx.metadata.url}${path}`, { headers: fx.identities.headers('gateway', { audience: 'metadata', method: 'GET', path, principal }) });
  return { status: res.status, body: await res.json() };
}

/** Creates an upload of `length` bytes; answers its URL. */
async function create(
  headers: Record<string, string>,
  length: number,
  metadata = `filename ${b64('f.bin')},filetype ${b64('application/octet-stream')}`,
): Promise<string> {
  const res = await fetch(endpoint, { method: 'POST', headers: { ...headers, 'upload-length': String(length), 'upload-metadata': metadata } });
  expect(res.status).toBe(201);
  return res.headers.get('location') as string;
}
const patch = (url: string, headers: Record<string, string>, offset: number, body: Buffer, extra: Record<string, string> = {}) =>
  fetch(url, { method: 'PATCH', headers: { ...headers, 'upload-offset': String(offset), 'content-type': 'application/offset+octet-stream', ...extra }, body });

describe('tus 1.0.0 at {upload}/api/v1/uploads/tus (CONTRACT §12)', () => {
  it('announces the version, extensions, checksum algorithms and size cap, without credentials, and allows browsers in', async () => {
    const res = await fetch(endpoint, {
      method: 'OPTIONS',
      headers: { origin: 'https://app.example', 'access-control-request-method': 'PATCH', 'access-control-request-headers': 'x-upload-key,upload-checksum' },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get('tus-version')).toBe('1.0.0');
    expect(res.headers.get('tus-extension')?.split(',')).toEqual(
      expect.arrayContaining(['creation', 'creation-with-upload', 'termination', 'expiration', 'checksum']),
    );
    expect(res.headers.get('tus-checksum-algorithm')).toBe('md5,sha1');
    expect(res.headers.get('tus-max-size')).toBe(String(64 * MiB));
    expect(res.headers.get('access-control-allow-origin')).toBeTruthy();
    expect(res.headers.get('access-control-allow-headers')?.toLowerCase()).toEqual(expect.stringContaining('x-upload-key'));
  });

  it('uploads a file in chunks with tus-js-client and an upload key, and makes the asset as Upload Asset does', async () => {
    const { gid } = newCaller();
    keyGroup = gid;
    const bytes = randomBytes(12 * MiB + 12345);
    let assetId: string | null = null;
    await new Promise<void>((resolve, reject) => {
      const u = new tus.Upload(bytes, {
        endpoint,
        chunkSize: 5 * MiB,
        retryDelays: [],
        headers: { 'X-Upload-Key': UPLOAD_KEY },
        metadata: { filename: 'big.bin', filetype: 'application/octet-stream', custom_metadata: JSON.stringify({ data: { source: 'tus' } }) },
        onAfterResponse: (_req, res) => {
          assetId = res.getHeader('X-Asset-Id') ?? assetId;
        },
        onError: reject,
        onSuccess: () => resolve(),
      });
      u.start();
    });
    expect(assetId).toMatch(/^[A-Za-z0-9]{32}$/);
    const id = assetId as unknown as string;
    // The original holds every byte, through the same checks (MD5, size, type sniffing) and registration.
    expect(md5(await readObject(`originals/${gid}/${id}`))).toBe(md5(bytes));
    const data = await assetData(gid, id);
    expect(data.status).toBe(200);
    expect(data.body).toMatchObject({ id, name: 'big.bin', size: bytes.length, checksum: md5(bytes), creator_id: 5, data: { source: 'tus' } });
    // Nothing of the upload is left in the store.
    await waitFor(async () => (await objectsUnder(fx.bucket, 'tus/')).length === 0, { description: 'tus objects removed' });
    expect(await incompleteUploads(fx.bucket, 'tus/')).toEqual([]);
  });

  it('takes the whole file in the creation request (creation-with-upload) and answers X-Asset-Id there', async () => {
    const { gid, headers } = newCaller();
    const png = makePng(9, 4);
    const res = await fetch(endpoint, {
      method: 'POST',
      headers: {
        ...headers,
        'upload-length': String(png.length),
        'upload-metadata': `filename ${b64('tiny.png')}`,
        'content-type': 'application/offset+octet-stream',
      },
      body: png,
    });
    expect(res.status).toBe(201);
    expect(res.headers.get('upload-offset')).toBe(String(png.length));
    const id = res.headers.get('x-asset-id') as string;
    expect((await assetData(gid, id)).body).toMatchObject({ id, name: 'tiny.png', content_type: 'image/png', metadata: { width: 9, height: 4 } });
  });

  it('resumes after a cut: HEAD tells the offset, a PATCH with a wrong offset is 409, the rest completes', async () => {
    const { gid, headers } = newCaller();
    const bytes = randomBytes(6 * MiB);
    const url = await create(headers, bytes.length);
    const first = await patch(url, headers, 0, bytes.subarray(0, 5 * MiB + 7));
    expect(first.status).toBe(204);
    expect(first.headers.get('upload-expires')).toBeTruthy();
    const head = await fetch(url, { method: 'HEAD', headers });
    expect(head.status).toBe(200);
    expect(head.headers.get('upload-offset')).toBe(String(5 * MiB + 7));
    expect(head.headers.get('upload-length')).toBe(String(bytes.length));
    const wrong = await patch(url, headers, 10, bytes.subarray(10));
    expect(wrong.status).toBe(409);
    expect(((await wrong.json()) as any).error.code).toBe('UPLOAD_OFFSET_MISMATCH');
    const last = await patch(url, headers, 5 * MiB + 7, bytes.subarray(5 * MiB + 7));
    expect(last.status).toBe(204);
    const id = last.headers.get('x-asset-id') as string;
    expect(md5(await readObject(`originals/${gid}/${id}`))).toBe(md5(bytes));
  });

  it('verifies Upload-Checksum (md5, sha1): a mismatched chunk is refused with 460 and leaves the offset as it was', async () => {
    const { headers } = newCaller();
    const bytes = randomBytes(3000);
    const url = await create(headers, bytes.length);
    const first = bytes.subarray(0, 1000);
    const sha1 = createHash('sha1').update(first).digest('base64');
    const bad = await patch(url, headers, 0, first, { 'upload-checksum': `sha1 ${createHash('sha1').update('other').digest('base64')}` });
    expect(bad.status).toBe(460);
    expect(((await bad.json()) as any).error.code).toBe('CHECKSUM_MISMATCH');
    expect((await fetch(url, { method: 'HEAD', headers })).headers.get('upload-offset')).toBe('0');
    // The chunk was staged in the store while hashed (not spooled to a local disk), and is gone with its answer.
    expect(await objectsUnder(fx.bucket, 'tus/chunk-')).toEqual([]);
    const unknown = await patch(url, headers, 0, first, { 'upload-checksum': 'crc32 AAAA' });
    expect(unknown.status).toBe(400);
    expect((await patch(url, headers, 0, first, { 'upload-checksum': `sha1 ${sha1}` })).status).toBe(204);
    const rest = bytes.subarray(1000);
    const done = await patch(url, headers, 1000, rest, { 'upload-checksum': `md5 ${createHash('md5').update(rest).digest('base64')}` });
    expect(done.status).toBe(204);
    expect(done.headers.get('x-asset-id')).toBeTruthy();
  });

  it('replays a creation under the same Idempotency-Key with its Location, and refuses the key for another request', async () => {
    const { headers } = newCaller();
    const keyed = { ...headers, 'idempotency-key': 'tus-create-1', 'upload-length': '10', 'upload-metadata': `filename ${b64('a.bin')}` };
    const first = await fetch(endpoint, { method: 'POST', headers: keyed });
    expect(first.status).toBe(201);
    const again = await fetch(endpoint, { method: 'POST', headers: keyed });
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.headers.get('location')).toBe(first.headers.get('location'));
    const other = await fetch(endpoint, { method: 'POST', headers: { ...keyed, 'upload-length': '11' } });
    expect(other.status).toBe(201); // headers are not the fingerprint: the same method, path and (empty) body
    const bodyDiffers = await fetch(endpoint, {
      method: 'POST',
      headers: { ...keyed, 'content-type': 'application/offset+octet-stream' },
      body: Buffer.from('0123456789'),
    });
    expect(bodyDiffers.status).toBe(422);
  });

  it('terminates an upload with DELETE, leaving no bytes behind', async () => {
    const { headers } = newCaller();
    const url = await create(headers, 7 * MiB);
    expect((await patch(url, headers, 0, randomBytes(5 * MiB + 100))).status).toBe(204);
    const id = url.split('/').pop() as string;
    expect((await objectsUnder(fx.bucket, `tus/${id}`)).length).toBeGreaterThan(0);
    expect((await fetch(url, { method: 'DELETE', headers })).status).toBe(204);
    expect((await fetch(url, { method: 'HEAD', headers })).status).toBe(404);
    expect(await objectsUnder(fx.bucket, `tus/${id}`)).toEqual([]);
    expect(await incompleteUploads(fx.bucket, `tus/${id}`)).toEqual([]);
  });

  it("shows an upload only to the user who created it, and answers errors with the contract's body", async () => {
    const owner = newCaller();
    const url = await create(owner.headers, 100);
    const other = newCaller();
    for (const method of ['HEAD', 'DELETE']) expect((await fetch(url, { method, headers: other.headers })).status).toBe(404);
    const stolen = await patch(url, other.headers, 0, randomBytes(100));
    expect(stolen.status).toBe(404);
    expect(((await stolen.json()) as any).error.code).toBe('UPLOAD_NOT_FOUND');
    expect((await fetch(url, { method: 'HEAD', headers: owner.headers })).headers.get('upload-offset')).toBe('0');
    // No credentials, no tus version, too large, bad custom_metadata, GET of the bytes.
    const anonymous = await fetch(endpoint, { method: 'POST', headers: { 'tus-resumable': '1.0.0', 'upload-length': '1' } });
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('access-control-allow-origin')).toBe('*');
    const noVersion = await fetch(endpoint, { method: 'POST', headers: { authorization: owner.headers.authorization, 'upload-length': '1' } });
    expect(noVersion.status).toBe(412);
    expect(((await noVersion.json()) as any).error.code).toBe('TUS_RESUMABLE_REQUIRED');
    const large = await fetch(endpoint, { method: 'POST', headers: { ...owner.headers, 'upload-length': String(65 * MiB) } });
    expect(large.status).toBe(413);
    const badMeta = await fetch(endpoint, {
      method: 'POST',
      headers: { ...owner.headers, 'upload-length': '5', 'upload-metadata': `filename ${b64('x')},custom_metadata ${b64('{nope')}` },
    });
    expect(badMeta.status).toBe(400);
    expect(((await badMeta.json()) as any).error.code).toBe('INVALID_CUSTOM_METADATA');
    expect((await fetch(url, { headers: owner.headers })).status).toBe(404);
  });

  it('takes an upload key on Upload Asset too, and answers 401 to it on Replace and Ingest', async () => {
    const { gid } = newCaller();
    keyGroup = gid;
    const form = new FormData();
    form.append('file', new Blob([makePng(3, 3)]), 'k.png');
    const viaKey = await fetch(`${upload.url}/api/v1/assets/new/content/original/upload?uploadkey=${UPLOAD_KEY}`, { method: 'POST', body: form });
    expect(viaKey.status).toBe(200);
    const id = ((await viaKey.json()) as any).files[0].id;
    expect((await assetData(gid, id)).body).toMatchObject({ id, creator_id: 5 });
    const replace = await fetch(`${upload.url}/api/v1/assets/${id}/content/original/replace`, {
      method: 'POST',
      headers: { 'x-upload-key': UPLOAD_KEY },
      body: form,
    });
    expect(replace.status).toBe(401);
    expect(((await replace.json()) as any).error.code).toBe('UPLOAD_KEY_NOT_ACCEPTED');
    const ingest = await fetch(`${upload.url}/api/v1/assets/new/content/original/external`, {
      method: 'POST',
      headers: { 'x-upload-key': UPLOAD_KEY, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'x', key: 'https://example.com/x' }),
    });
    expect(ingest.status).toBe(401);
    keyGroup = 0; // the key is now refused by auth
    const refused = await fetch(endpoint, { method: 'POST', headers: { 'x-upload-key': UPLOAD_KEY, 'tus-resumable': '1.0.0', 'upload-length': '1' } });
    expect(refused.status).toBe(401);
    expect(((await refused.json()) as any).error.code).toBe('INVALID_UPLOAD_KEY');
  });
});

describe('tus expiration', () => {
  it('removes an unfinished upload (its parts, its state) once TUS_EXPIRY_MS has passed', async () => {
    const bucket = await createBucket('tus-expiry');
    // The POST, the 5 MiB PATCH and the two listings below must all come before the expiry (counted from the POST):
    // 1.5 s was thin for a loaded machine, so it is stretched with it.
    const short = await startUpload({ ...s3Env(bucket), TUS_EXPIRY_MS: String(scaled(3000)), TUS_SWEEP_INTERVAL_MS: '300' });
    const { headers } = newCaller();
    const res = await fetch(`${short.url}/api/v1/uploads/tus`, {
      method: 'POST',
      headers: { ...headers, 'upload-length': String(8 * MiB), 'upload-metadata': `filename ${b64('e.bin')}` },
    });
    expect(res.status).toBe(201);
    expect(res.headers.get('upload-expires')).toBeTruthy();
    const url = res.headers.get('location') as string;
    expect((await patch(url, headers, 0, randomBytes(5 * MiB + 10))).status).toBe(204);
    expect((await objectsUnder(bucket, 'tus/')).length).toBeGreaterThan(0);
    expect((await incompleteUploads(bucket, 'tus/')).length).toBe(1);
    await waitFor(async () => (await objectsUnder(bucket, 'tus/')).length === 0 && (await incompleteUploads(bucket, 'tus/')).length === 0, {
      description: 'the expired upload swept',
      timeoutMs: 15_000,
    });
    expect([404, 410]).toContain((await fetch(url, { method: 'HEAD', headers })).status);
  });
});

describe('tus bodies within the upload limits (security review F6)', () => {
  // The fast refusals below must come well within it; a longer one only makes the idle cases slower (CI time).
  const IDLE_MS = scaled(1000);
  let limited: ServiceProcess;
  let tusUrl: string;
  beforeAll(async () => {
    limited = await startUpload({ MAX_UPLOAD_BYTES: String(64 * MiB), UPLOAD_IDLE_TIMEOUT_MS: String(IDLE_MS), UPLOAD_MAX_CONCURRENT_PER_PRINCIPAL: '2' });
    tusUrl = `${limited.url}/api/v1/uploads/tus`;
  }, scaled(60_000));

  interface Stalled {
    status: number;
    body: string;
    connection: string | undefined;
    /** From the request's start until the server closed the connection; undefined when it was still open. */
    closedAfterMs: number | undefined;
    /** How many body bytes the client could write before the answer came. */
    sent: number;
  }

  /**
   * Sends the head of a request and `first` body bytes of the `declared` ones (chunked when undefined), then nothing
   * more; resolves once the server answered and closed the connection, or after `patienceMs` (then still open).
   */
  function stalled(
    target: string,
    method: string,
    headers: Record<string, string>,
    declared: number | undefined,
    first: Buffer,
    patienceMs: number,
  ): Promise<Stalled> {
    const started = Date.now();
    return new Promise((resolve) => {
      const req = httpRequest(target, {
        method,
        agent: false, // a fresh connection, so its closing is this request's doing
        headers: { ...headers, ...(declared === undefined ? {} : { 'content-length': String(declared) }) },
      });
      let answer: Omit<Stalled, 'closedAfterMs'> = { status: 0, body: '', connection: undefined, sent: 0 };
      const giveUp = setTimeout(() => {
        req.destroy();
        resolve({ ...answer, closedAfterMs: undefined });
      }, patienceMs);
      const done = () => {
        clearTimeout(giveUp);
        resolve({ ...answer, closedAfterMs: Date.now() - started });
      };
      req.on('response', (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => {
          answer = { ...answer, status: res.statusCode ?? 0, body: text, connection: res.headers.connection };
          const socket = req.socket;
          if (!socket || socket.destroyed) done();
          else socket.once('close', done);
        });
      });
      // The server closing the connection without an answer (status 0) also ends it.
      req.on('error', done);
      req.write(first, () => (answer.sent = first.length));
    });
  }
  const stalledPatch = async (url: string, headers: Record<string, string>, extra: Record<string, string> = {}, declared: number | undefined = 10 * MiB) =>
    stalled(
      url,
      'PATCH',
      { ...headers, 'upload-offset': '0', 'content-type': 'application/offset+octet-stream', ...extra },
      declared,
      Buffer.alloc(64 * 1024, 1),
      IDLE_MS + scaled(10_000),
    );
  const onTus = (url: string) => url.replace(endpoint, tusUrl);
  const createHere = async (headers: Record<string, string>, length: number) => {
    const res = await fetch(tusUrl, {
      method: 'POST',
      headers: { ...headers, 'upload-length': String(length), 'upload-metadata': `filename ${b64('f.bin')}` },
    });
    expect(res.status).toBe(201);
    return onTus(res.headers.get('location') as string);
  };

  it('abandons a stalled PATCH after the idle timeout with 408 (it stayed open before)', async () => {
    const { headers } = newCaller();
    const url = await createHere(headers, 20 * MiB);
    const answer = await stalledPatch(url, headers);
    expect(answer.closedAfterMs).toBeDefined();
    expect(answer.status).toBe(408);
    expect(JSON.parse(answer.body)).toEqual({ error: { code: 'UPLOAD_IDLE_TIMEOUT', message: expect.any(String) } });
    expect(answer.connection).toBe('close');
    expect(answer.closedAfterMs).toBeGreaterThanOrEqual(IDLE_MS);
    // What arrived stays in the upload (tus keeps partial chunks); the upload can go on.
    const head = await fetch(url, { method: 'HEAD', headers });
    expect(head.status).toBe(200);
  });

  it('abandons a stalled PATCH with Upload-Checksum after the idle timeout with 408, leaving no staged chunk', async () => {
    const { headers } = newCaller();
    const url = await createHere(headers, 20 * MiB);
    const answer = await stalledPatch(url, headers, { 'upload-checksum': `md5 ${Buffer.alloc(16).toString('base64')}` });
    expect(answer.status).toBe(408);
    expect((await fetch(url, { method: 'HEAD', headers })).headers.get('upload-offset')).toBe('0');
    await waitFor(async () => (await objectsUnder(fx.bucket, 'tus/chunk-')).length === 0, { description: 'no staged chunk left', timeoutMs: scaled(5000) });
  });

  it('abandons a stalled repeat under a kept Idempotency-Key after the idle timeout with 408 (it stayed open before)', async () => {
    const { headers } = newCaller();
    const keyed = {
      ...headers,
      'idempotency-key': 'stalled-repeat',
      'upload-length': '10',
      'upload-metadata': `filename ${b64('a.bin')}`,
      'content-type': 'application/offset+octet-stream',
    };
    const first = await fetch(tusUrl, { method: 'POST', headers: keyed, body: Buffer.from('0123456789') });
    expect(first.status).toBe(201);
    const answer = await stalled(tusUrl, 'POST', keyed, 10 * MiB, Buffer.alloc(64 * 1024, 1), IDLE_MS + scaled(10_000));
    expect(answer.closedAfterMs).toBeDefined();
    expect(answer.status).toBe(408);
    expect(JSON.parse(answer.body).error.code).toBe('UPLOAD_IDLE_TIMEOUT');
    // A repeat declaring more than the route takes is refused before it is read.
    const huge = await stalled(tusUrl, 'POST', keyed, 65 * MiB, Buffer.alloc(1024, 1), scaled(10_000));
    expect(huge.status).toBe(413);
  });

  it('refuses a PATCH with Upload-Checksum larger than what is left of the upload with 413, before reading it', async () => {
    const { headers } = newCaller();
    const url = await createHere(headers, 10);
    // 24 MiB declared on an upload of 10 bytes: answered at once, while the client has sent 64 KiB and waits.
    const declared = await stalledPatch(url, headers, { 'upload-checksum': `md5 ${Buffer.alloc(16).toString('base64')}` }, 24 * MiB);
    expect(declared.status).toBe(413);
    expect(JSON.parse(declared.body).error.code).toBe('UPLOAD_TOO_LARGE');
    expect(declared.closedAfterMs).toBeLessThan(IDLE_MS);
    // Chunked (no Content-Length): refused once past the 10 bytes left, not after the whole body.
    const chunked = await stalledPatch(url, headers, { 'upload-checksum': `md5 ${Buffer.alloc(16).toString('base64')}` }, undefined);
    expect(chunked.status).toBe(413);
    expect(chunked.closedAfterMs).toBeLessThan(IDLE_MS);
    expect((await fetch(url, { method: 'HEAD', headers })).headers.get('upload-offset')).toBe('0');
  });

  it('closes a connection silent for four times the idle timeout, whatever it was reading (a stalled JSON body)', async () => {
    const { headers } = newCaller();
    const json = { ...headers, 'content-type': 'application/json' };
    const answer = await stalled(
      `${limited.url}/api/v1/assets/new/content/original/external`,
      'POST',
      json,
      1000,
      Buffer.from('{"name":"a'),
      4 * IDLE_MS + scaled(15_000),
    );
    // Before: requestTimeout 0 and no socket timeout kept it open for ever.
    expect(answer.closedAfterMs).toBeDefined();
    expect(answer.closedAfterMs).toBeGreaterThanOrEqual(4 * IDLE_MS);
  });

  it('answers 429 to a PATCH past the concurrent uploads of one caller, and serves others meanwhile', async () => {
    const { headers } = newCaller();
    const urls = await Promise.all([createHere(headers, 20 * MiB), createHere(headers, 20 * MiB), createHere(headers, 10)]);
    const first = stalledPatch(urls[0] as string, headers);
    const second = stalledPatch(urls[1] as string, headers);
    // Both reading (their first bytes are in the upload's part) before the third comes.
    await new Promise((r) => setTimeout(r, scaled(500)));
    const third = await fetch(urls[2] as string, {
      method: 'PATCH',
      headers: { ...headers, 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' },
      body: Buffer.from('0123456789'),
    });
    expect(third.status).toBe(429);
    expect(((await third.json()) as any).error.code).toBe('RATE_LIMITED');
    const other = newCaller().headers;
    const otherUrl = await createHere(other, 5);
    expect(
      (
        await fetch(otherUrl, {
          method: 'PATCH',
          headers: { ...other, 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' },
          body: Buffer.from('hello'),
        })
      ).status,
    ).toBe(204);
    expect((await first).status).toBe(408);
    expect((await second).status).toBe(408);
  });
});
