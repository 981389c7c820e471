/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are untyped JSON; the assertions check them */
import { createPool } from '@dam/db';
import { waitFor } from '@dam/testing';
import { login, useSuite } from './suite';

/** CONTRACT §13: Idempotency-Key on the POSTs of {base} and {upload}. */
const e2e = useSuite();
const { call } = e2e.api;
const keyed = (key: string, as = e2e.jwt) => ({ authorization: `Bearer ${as}`, 'idempotency-key': key });

/** Rows of the idempotency_keys table of the gateway's and upload's databases, where the responses are kept. */
async function keyRows(): Promise<Array<{ response: { body?: string } | null }>> {
  const rows: Array<{ response: { body?: string } | null }> = [];
  for (const service of ['gateway', 'upload']) {
    const db = createPool(e2e.suite.databaseOf(service));
    try {
      rows.push(...(await db.query<{ response: { body?: string } | null }>('SELECT response FROM idempotency_keys')).rows);
    } finally {
      await db.end();
    }
  }
  return rows;
}

/** Whether a request holds an Idempotency-Key now: a key without its response yet. */
const someKeyRunning = async (): Promise<boolean> => (await keyRows()).some((r) => r.response === null);

/** Every response the services keep now, as text (kept answers with their bodies decoded). */
async function keptAnswers(): Promise<string> {
  return (await keyRows())
    .flatMap((r) => (r.response ? [JSON.stringify(r.response), r.response.body ? Buffer.from(r.response.body, 'base64').toString('utf8') : ''] : []))
    .join('\n');
}

async function uploadKeyed(key: string, files: Array<{ name: string; bytes: Buffer }>, metadata?: unknown) {
  const form = new FormData();
  if (metadata) form.append('custom_metadata', JSON.stringify(metadata));
  files.forEach((f, i) => form.append(`file${i}`, new Blob([f.bytes]), f.name));
  const res = await fetch(`${e2e.suite.upload}/api/v1/assets/new/content/original/upload`, { method: 'POST', headers: keyed(key), body: form });
  return { status: res.status, replayed: res.headers.get('idempotent-replayed'), body: (await res.json()) as any };
}

describe('Idempotency-Key (CONTRACT §13)', () => {
  it('on {base}: the first answer again for the same request, 422 for another request under the key, per user', async () => {
    const before = (await call('GET', '/api/v1/collections')).body.items.length as number;
    const first = await call('POST', '/api/v1/collections', { name: 'Once only' }, keyed('create-once'));
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const again = await call('POST', '/api/v1/collections', { name: 'Once only' }, keyed('create-once'));
    expect(again).toMatchObject({ status: 201, body: first.body });
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect((await call('GET', '/api/v1/collections')).body.items).toHaveLength(before + 1);
    expect(await call('POST', '/api/v1/collections', { name: 'Something else' }, keyed('create-once'))).toMatchObject({
      status: 422,
      body: { error: { code: 'IDEMPOTENCY_KEY_REUSED' } },
    });
    // Another user's key of the same name is theirs.
    expect((await call('POST', '/api/v1/users', { email: 'idem@example.com', password: 'idem-password-1', role_id: 2 })).status).toBe(201);
    const other = await login(e2e.suite.base, 'idem@example.com', 'idem-password-1');
    const theirs = await call('POST', '/api/v1/collections', { name: 'Something else' }, keyed('create-once', other));
    expect(theirs.status).toBe(201);
    expect(theirs.body).not.toEqual(first.body);
    expect((await call('POST', '/api/v1/collections', { name: 'x' }, keyed('x'.repeat(256)))).body.error.code).toBe('INVALID_IDEMPOTENCY_KEY');
  });

  it('on {upload}: one set of assets for a repeated multipart upload (another boundary), 422 when a file differs', async () => {
    const files = [
      { name: 'a.txt', bytes: Buffer.from('first file') },
      { name: 'b.txt', bytes: Buffer.from('second file') },
    ];
    const first = await uploadKeyed('upload-once', files, { data: { project: 'idem' } });
    expect(first.status).toBe(200);
    const again = await uploadKeyed('upload-once', files, { data: { project: 'idem' } });
    expect(again).toMatchObject({ status: 200, replayed: 'true', body: first.body });
    expect(again.body.files.map((f: any) => f.id)).toEqual(first.body.files.map((f: any) => f.id));
    const renamed = await uploadKeyed('upload-once', [files[0]!, { ...files[1]!, name: 'c.txt' }], { data: { project: 'idem' } });
    expect(renamed).toMatchObject({ status: 422, body: { error: { code: 'IDEMPOTENCY_KEY_REUSED' } } });
    const otherMetadata = await uploadKeyed('upload-once', files, { data: { project: 'other' } });
    expect(otherMetadata.status).toBe(422);
  });

  it('answers 409 to a repeat while the first is still running, then the first answer', async () => {
    // A body that arrives slowly: the first upload runs while the repeat comes.
    const boundary = 'idem-slow-boundary';
    const head = Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="slow.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`,
    );
    const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
    let push!: (chunk: Uint8Array | null) => void;
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        push = (chunk) => (chunk ? controller.enqueue(chunk) : controller.close());
      },
    });
    expect(await someKeyRunning()).toBe(false); // what the wait below waits for is this request's doing
    const slow = fetch(`${e2e.suite.upload}/api/v1/assets/new/content/original/upload`, {
      method: 'POST',
      headers: { ...keyed('slow-once'), 'content-type': `multipart/form-data; boundary=${boundary}` },
      body,
      duplex: 'half',
    } as RequestInit);
    push(head);
    push(Buffer.alloc(64 * 1024, 1));
    // The repeat must come once the first holds the key (it is the only request in flight), not after a fixed 500 ms.
    await waitFor(someKeyRunning, { description: 'the first upload holding its key' });
    const form = new FormData();
    form.append('file', new Blob([Buffer.alloc(64 * 1024, 1)]), 'slow.bin');
    const during = await fetch(`${e2e.suite.upload}/api/v1/assets/new/content/original/upload`, { method: 'POST', headers: keyed('slow-once'), body: form });
    expect(during.status).toBe(409);
    expect(((await during.json()) as any).error.code).toBe('IDEMPOTENCY_IN_FLIGHT');
    push(tail);
    push(null);
    const first = await slow;
    expect(first.status).toBe(200);
    const firstBody = (await first.json()) as any;
    const after = await fetch(`${e2e.suite.upload}/api/v1/assets/new/content/original/upload`, { method: 'POST', headers: keyed('slow-once'), body: form });
    expect(after.status).toBe(200);
    expect(after.headers.get('idempotent-replayed')).toBe('true');
    expect(((await after.json()) as any).files[0].id).toBe(firstBody.files[0].id);
  });

  it('keeps no credential: a repeat of POST /api_keys or /users/me/uploadkey answers without the secret (security review I2)', async () => {
    const minted = await call('POST', '/api/v1/api_keys', { name: 'idem-key', role: 'USER' }, keyed('mint-once'));
    expect(minted.status).toBe(201);
    const rotated = await call('POST', '/api/v1/users/me/uploadkey', undefined, keyed('rotate-once'));
    expect(rotated.status).toBe(200);
    const secrets = [minted.body.key as string, rotated.body.uploadkey as string];
    expect(secrets.every((k) => typeof k === 'string' && k.length > 10)).toBe(true);
    // Kept once the answers are out (read from the tables the gateway and upload keep them in).
    await waitFor(async () => (await keptAnswers()).includes(minted.body.key_id as string), { description: 'the answer kept' });
    const kept = await keptAnswers();
    for (const secret of secrets) expect(kept).not.toContain(secret);
    expect(minted.headers.get('cache-control')).toBe('no-store'); // nor may any cache keep it
    const again = await call('POST', '/api/v1/api_keys', { name: 'idem-key', role: 'USER' }, keyed('mint-once'));
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.headers.get('idempotent-withheld')).toBe('key');
    expect(again.body).toEqual({ key_id: minted.body.key_id, name: 'idem-key', role: 'USER' });
    const rotatedAgain = await call('POST', '/api/v1/users/me/uploadkey', undefined, keyed('rotate-once'));
    expect(rotatedAgain).toMatchObject({ status: 200, body: {} });
    expect(rotatedAgain.headers.get('idempotent-withheld')).toBe('uploadkey');
  });
});
