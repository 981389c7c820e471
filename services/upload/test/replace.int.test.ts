/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are untyped JSON; the assertions check them */
import { createHash } from 'node:crypto';
import type { Server } from 'node:http';
import { createAuthenticator, permissionsFor, signJwt } from '@dam/auth-tokens';
import { createLogger } from '@dam/logging';
import { createStorage } from '@dam/storage';
import { scaled, testMinioClient, testS3Config, waitFor } from '@dam/testing';
import { httpMetadataClient } from '../src/adapters/metadata.client';
import { buildUploadApp } from '../src/app';
import { s3OrphanObjects } from '../src/adapters/s3-objects';
import { reapOrphans } from '../src/use-cases/reap-orphans.use-case';
import { replacementJournalId } from '../src/use-cases/replace-asset.use-case';
import { startUploadFixtures, type UploadFixtures } from './harness';
import { makePng } from '@dam/testing';

const JWT_SECRET = 'jwt-secret-for-replace-tests-0123456789';
let fx: UploadFixtures;
let server: Server;
let base: string;

beforeAll(async () => {
  // Replaced originals go at once here (no grace for streaming downloads), so the bucket can be checked.
  fx = await startUploadFixtures('replace', { REPLACED_ORIGINAL_GRACE_MS: '0', OBJECT_DELETIONS_INTERVAL_MS: '100' });
  const app = buildUploadApp({
    logger: createLogger({ service: 'replace-test', level: 'silent' }),
    storage: createStorage(testS3Config(fx.bucket)),
    metadata: httpMetadataClient({ baseUrl: fx.metadata.url, signer: fx.identities.signer('upload') }),
    journal: fx.journal,
    authenticate: createAuthenticator({ jwtSecret: JWT_SECRET, authUrl: 'http://127.0.0.1:9', signer: fx.identities.signer('upload') }),
    maxUploadBytes: 1024 * 1024,
    trustProxy: false,
  });
  server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const address = server.address();
  base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
}, scaled(120_000));

afterAll(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  await fx?.stop();
});

let nextGroup = 300;
const caller = (role = 1, gid = nextGroup++, sub = 5) => {
  const { token } = signJwt({ sub, gid, role }, JWT_SECRET, 600);
  return { gid, sub, role, auth: { authorization: `Bearer ${token}` } };
};
const md5 = (b: Buffer) => createHash('md5').update(b).digest('hex');
const form = (bytes: Buffer, name: string, extra: Record<string, string> = {}) => {
  const f = new FormData();
  for (const [k, v] of Object.entries(extra)) f.append(k, v);
  f.append('file', new Blob([bytes]), name);
  return f;
};
async function keysUnder(prefix: string): Promise<string[]> {
  const names: string[] = [];
  for await (const item of testMinioClient().listObjectsV2(fx.bucket, prefix, true)) if (item.name) names.push(item.name);
  return names.sort();
}
async function data(c: ReturnType<typeof caller>, id: string): Promise<any> {
  const roles: Record<number, 'ADMIN' | 'USER'> = { 1: 'ADMIN', 3: 'USER' };
  const role = roles[c.role] ?? 'ADMIN';
  const principal = { user_id: c.sub, group_id: c.gid, role_id: c.role, role_name: role, permissions: permissionsFor(role), via: 'jwt' as const };
  const path = `/api/v1/assets/${id}/data`;
  const res = await fetch(`${fx.metadata.url}${path}`, { headers: fx.identities.headers('gateway', { audience: 'metadata', method: 'GET', path, principal }) });
  return res.json();
}
async function upload(c: ReturnType<typeof caller>, bytes: Buffer, name: string): Promise<string> {
  const res = await fetch(`${base}/api/v1/assets/new/content/original/upload`, { method: 'POST', headers: c.auth, body: form(bytes, name) });
  expect(res.status).toBe(200);
  return ((await res.json()) as any).files[0].id;
}
const replace = (c: ReturnType<typeof caller>, id: string, body: FormData) =>
  fetch(`${base}/api/v1/assets/${id}/content/original/replace`, { method: 'POST', headers: c.auth, body });

describe('POST {upload}/api/v1/assets/{asset_id}/content/original/replace', () => {
  it('keeps the id, takes the new checksum, size, type and image metadata, and removes the old original', async () => {
    const c = caller();
    const id = await upload(c, Buffer.from('plain text first'), 'a.txt');
    await waitFor(async () => (await data(c, id)).status === 'OK', { description: 'text asset OK' });
    const png = makePng(9, 4);
    const res = await replace(c, id, form(png, 'b.png', { custom_metadata: JSON.stringify({ data: { replaced: true } }) }));
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      files: [{ id, name: 'b.png', size: png.length, checksum: md5(png), content_type: 'image/png', metadata: { width: 9, height: 4 }, status: 'NOT_READY' }],
      success: true,
      provider: 'local',
    });
    // An image needs its conversions again: NOT_READY until they are made (no conversion service runs here).
    expect(await data(c, id)).toMatchObject({
      id,
      status: 'NOT_READY',
      checksum: md5(png),
      size: png.length,
      content_type: 'image/png',
      name: 'b.png',
      data: { replaced: true },
    });
    await waitFor(async () => (await keysUnder(`originals/${c.gid}/`)).length === 1, { description: 'old original removed' });
    const [only] = await keysUnder(`originals/${c.gid}/`);
    expect(only).toMatch(new RegExp(`^originals/${c.gid}/${id}-[0-9a-f]{16}$`));
    const download = await fetch(`${fx.metadata.url}/api/v1/assets/${id}/content/original/download`, {
      headers: fx.identities.headers('gateway', {
        audience: 'metadata',
        method: 'GET',
        path: `/api/v1/assets/${id}/content/original/download`,
        principal: { user_id: c.sub, group_id: c.gid, role_id: 1, role_name: 'ADMIN', permissions: permissionsFor('ADMIN'), via: 'jwt' },
      }),
    });
    expect(Buffer.from(await download.arrayBuffer())).toEqual(png);
  });

  it("answers 404 for an unknown id, another group's asset or a malformed id, and 403 for a USER replacing another's asset, storing nothing", async () => {
    const owner = caller();
    const id = await upload(owner, Buffer.from('mine'), 'm.txt');
    const before = await keysUnder('originals/');
    for (const [who, target] of [
      [owner, '0'.repeat(32)],
      [caller(), id],
      [owner, 'not-an-id'],
    ] as const) {
      const res = await replace(who, target, form(Buffer.from('x'), 'x.txt'));
      expect(res.status).toBe(404);
      expect(((await res.json()) as any).error.code).toBe('ASSET_NOT_FOUND');
    }
    const stranger = caller(3, owner.gid, 77);
    const res = await replace(stranger, id, form(Buffer.from('x'), 'x.txt'));
    expect(res.status).toBe(403);
    expect(await keysUnder('originals/')).toEqual(before);
  });

  it('answers 400 without a file and with two files, leaving the asset and the bucket as they were', async () => {
    const c = caller();
    const id = await upload(c, Buffer.from('stays'), 's.txt');
    const before = await keysUnder(`originals/${c.gid}/`);
    const none = new FormData();
    none.append('note', 'no file');
    expect((await replace(c, id, none)).status).toBe(400);
    const two = form(Buffer.from('one'), 'one.txt');
    two.append('file2', new Blob([Buffer.from('two')]), 'two.txt');
    expect((await replace(c, id, two)).status).toBe(400);
    expect(await keysUnder(`originals/${c.gid}/`)).toEqual(before);
    expect((await data(c, id)).checksum).toBe(md5(Buffer.from('stays')));
  });

  it('reaps a replacement object whose request died before metadata took it, and keeps one metadata took', async () => {
    const c = caller();
    const id = await upload(c, Buffer.from('old'), 'o.txt');
    const orphan = `originals/${c.gid}/${id}-00000000000000aa`;
    await createStorage(testS3Config(fx.bucket)).putBuffer(orphan, Buffer.from('half'), { contentType: 'text/plain' });
    const principal = { group_id: c.gid, user_id: c.sub, role_id: 1, role_name: 'ADMIN', started_at: new Date(0).toISOString() };
    await fx.journal.open(replacementJournalId(id, '00000000000000aa'), { object_key: orphan, ...principal }).then((h) => h.abandon());
    // A replacement that did land, whose journal entry outlived its request.
    const res = await replace(c, id, form(Buffer.from('new'), 'n.txt'));
    expect(res.status).toBe(200);
    await waitFor(async () => !(await keysUnder(`originals/${c.gid}/`)).includes(`originals/${c.gid}/${id}`), { description: 'old original removed' });
    const [live] = (await keysUnder(`originals/${c.gid}/`)).filter((k) => k !== orphan);
    await fx.journal.open(replacementJournalId(id, (live ?? '').slice(-16)), { object_key: live ?? '', ...principal }).then((h) => h.abandon());

    await reapOrphans({
      journal: fx.journal,
      objects: s3OrphanObjects(createStorage(testS3Config(fx.bucket))),
      metadata: httpMetadataClient({ baseUrl: fx.metadata.url, signer: fx.identities.signer('upload') }),
      logger: createLogger({ service: 'reaper-test', level: 'silent' }),
      graceMs: 0,
    });
    await waitFor(async () => !(await keysUnder(`originals/${c.gid}/`)).includes(orphan), { description: 'orphan reaped' });
    expect(await keysUnder(`originals/${c.gid}/`)).toEqual([live]);
  });
});
