/**
 * Security review F8 (issue 30), the local runner's half: the {cdn} edge, which faces the internet, reaches the
 * local object store (radosgw, deploy/infra/s3.sh) with a read-only user of its own, as deploy/local/up starts it
 * (deploy/local/s3-users.sh), and not with the owner's keys every other service uses. Through the same storage
 * adapter the edge uses: everything the edge does works (readiness, stat, GET, ranges, listing, presigned GETs), and
 * writing, removing or replacing the bucket policy is refused.
 *
 * A throwaway radosgw on free ports (about 15 s): longer than a unit test's usual limit.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createStorage, type Storage } from '../../libs/storage/src/storage';
import { freePort } from '../../libs/testing/src/free-port';
import { scaled } from '../../libs/testing/src/time-scale';

jest.setTimeout(scaled(120_000));

const ROOT = path.resolve(__dirname, '..', '..');
const S3_SCRIPT = path.join(ROOT, 'deploy', 'infra', 's3.sh');
const OWNER = { accessKey: 'testaccess', secretKey: 'testsecret123' };
const BUCKET = 'dam-assets';

/** What deploy/local/s3-users.sh defines and hands to one service (`NAME=value` words, as up passes them to env). */
function localS3(service: string, storeDir: string): { edge: { access: string; secret: string }; keys: Record<string, string> } {
  const out = execFileSync(
    'bash',
    ['-c', '. deploy/local/s3-users.sh && echo "$S3_EDGE_ACCESS_KEY $S3_EDGE_SECRET_KEY" && dam_s3_keys "$0" "$1"', service, storeDir],
    {
      cwd: ROOT,
      encoding: 'utf8',
    },
  ).split('\n');
  const [access = '', secret = ''] = (out[0] ?? '').split(' ');
  const keys = Object.fromEntries(
    (out[1] ?? '')
      .split(' ')
      .filter(Boolean)
      .map((w) => w.split('=') as [string, string]),
  );
  return { edge: { access, secret }, keys };
}

let base: string;
let dir: string;
let endpoint: string;
const storageWith = (keys: { accessKey: string; secretKey: string }): Storage =>
  createStorage({ endpoint, bucket: BUCKET, region: 'us-east-1', timeoutMs: scaled(20_000), ...keys });

beforeAll(async () => {
  base = mkdtempSync(path.join(os.tmpdir(), 'dam-s3-users-'));
  dir = path.join(base, 's3');
  const port = await freePort();
  const { edge } = localS3('link-signing', dir);
  execFileSync(S3_SCRIPT, ['start', dir, String(port)], {
    env: {
      ...process.env,
      S3_ACCESS_KEY: OWNER.accessKey,
      S3_SECRET_KEY: OWNER.secretKey,
      S3_MON_PORT: String(await freePort()),
      S3_MEM_BYTES: String(512 * 1024 ** 2),
      // As deploy/local/up starts the store.
      S3_READONLY_ACCESS_KEY: edge.access,
      S3_READONLY_SECRET_KEY: edge.secret,
    },
    stdio: 'ignore',
    timeout: scaled(110_000),
  });
  endpoint = `http://127.0.0.1:${port}`;
  const owner = storageWith(OWNER);
  await owner.ensureBucket();
  await owner.putBuffer('originals/1/a', Buffer.from('hello edge'), { contentType: 'text/plain', size: 10 });
});

afterAll(() => {
  if (dir) execFileSync(S3_SCRIPT, ['stop', dir], { stdio: 'ignore' });
  if (base) rmSync(base, { recursive: true, force: true });
});

describe("the local object store's users (F8)", () => {
  it("starts the edge alone with its own keys, which are not the owner's", () => {
    const { edge, keys } = localS3('link-signing', dir);
    expect(keys).toEqual({ S3_ACCESS_KEY: edge.access, S3_SECRET_KEY: edge.secret });
    expect(edge.access).not.toBe(OWNER.accessKey);
    for (const other of ['upload', 'metadata', 'conversion', 'transcode', 'addon']) expect([other, localS3(other, dir).keys]).toEqual([other, {}]);
  });

  it("lets the edge's keys do what the edge does, and nothing that writes", async () => {
    const { keys } = localS3('link-signing', dir);
    const edge = storageWith({ accessKey: keys.S3_ACCESS_KEY as string, secretKey: keys.S3_SECRET_KEY as string });
    expect(await edge.reachable()).toBe(true);
    expect((await edge.stat('originals/1/a'))?.size).toBe(10);
    expect((await edge.getBuffer('originals/1/a')).toString()).toBe('hello edge');
    let ranged = '';
    for await (const chunk of await edge.getRange('originals/1/a', 6, 9)) ranged += String(chunk);
    expect(ranged).toBe('edge');
    expect(await edge.listKeys('originals/')).toEqual(['originals/1/a']);
    const presigned = await fetch(await edge.presignGet('originals/1/a', 60));
    expect([presigned.status, await presigned.text()]).toEqual([200, 'hello edge']);

    const refused = async (what: string, p: Promise<unknown>) => [
      what,
      await p.then(
        () => 'done',
        (e: { code?: string }) => e.code,
      ),
    ];
    expect(await refused('put', edge.putBuffer('originals/1/b', Buffer.from('x'), { contentType: 'text/plain', size: 1 }))).toEqual(['put', 'AccessDenied']);
    expect(await refused('remove', edge.remove('originals/1/a'))).toEqual(['remove', 'AccessDenied']);
    expect(await refused('bucket policy', edge.publishPrefix('originals/'))).toEqual(['bucket policy', 'AccessDenied']);
    expect(await refused('copy', edge.copy('originals/1/a', 'public/1/a/0123456789abcdef/a'))).toEqual(['copy', 'AccessDenied']);
    // Nothing changed: the owner still reads the object, and the refused write left none.
    const owner = storageWith(OWNER);
    expect((await owner.getBuffer('originals/1/a')).toString()).toBe('hello edge');
    expect(await owner.stat('originals/1/b')).toBeNull();
  });
});
