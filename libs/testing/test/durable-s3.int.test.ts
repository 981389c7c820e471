import { createHash, randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'minio';
import { run } from '../src/exec';
import { freePort } from '../src/free-port';
import { infraScript } from '../src/paths';
import { scaled } from '../src/time-scale';

// The S3 server deploy/local/up starts keeps what it stores (issue 14): radosgw on BlueStore in a sparse file.
jest.setTimeout(scaled(240_000));

const script = infraScript('s3.sh');
const base = mkdtempSync(path.join(os.tmpdir(), 'dam-s3-durable-'));
chmodSync(base, 0o755);
const dir = path.join(base, 's3');
let port = 0;
let env: Record<string, string> = {};
const md5 = (b: Buffer) => createHash('md5').update(b).digest('hex');

beforeAll(async () => {
  port = await freePort();
  env = { S3_DURABLE: '1', S3_ACCESS_KEY: 'durableaccess', S3_SECRET_KEY: 'durablesecret123', S3_MON_PORT: String(await freePort()) };
});
afterAll(() => {
  try {
    execFileSync(script, ['stop', dir], { stdio: 'ignore', env: { ...process.env, ...env } });
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
});

const client = () =>
  new Client({
    endPoint: '127.0.0.1',
    port,
    useSSL: false,
    accessKey: env.S3_ACCESS_KEY as string,
    secretKey: env.S3_SECRET_KEY as string,
    region: 'us-east-1',
    pathStyle: true,
  });
async function read(c: Client, key: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of await c.getObject('originals', key)) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

it('keeps every object across a stop and a start, and across a crash of its daemons', async () => {
  await run(script, ['start', dir, String(port)], env, 180_000);
  const files = new Map<string, Buffer>([
    ['small.txt', Buffer.from('kept across restarts')],
    ['one-part.bin', randomBytes(3 * 1024 * 1024)],
    ['multipart.bin', randomBytes(23 * 1024 * 1024)], // several 5 MiB parts
  ]);
  const c = client();
  await c.makeBucket('originals', 'us-east-1');
  for (const [key, bytes] of files) await c.putObject('originals', key, bytes, bytes.length);

  // A clean stop and start: the store is mounted again as it was, no mkfs.
  await run(script, ['stop', dir], env);
  await run(script, ['start', dir, String(port)], env, 180_000);
  for (const [key, bytes] of files) expect(md5(await read(client(), key))).toBe(md5(bytes));

  // Every daemon killed at once (a crash, a reboot): BlueStore replays its log at the next start.
  execFileSync('sh', ['-c', `kill -9 $(cat ${dir}/run/*.pid)`]);
  await run(script, ['start', dir, String(port)], env, 180_000);
  for (const [key, bytes] of files) expect(md5(await read(client(), key))).toBe(md5(bytes));
  const after = Buffer.from('written after the crash');
  await client().putObject('originals', 'after.txt', after, after.length);
  expect((await read(client(), 'after.txt')).toString()).toBe('written after the crash');

  // A memstore start never wipes a durable store by mistake.
  await run(script, ['stop', dir], env);
  await expect(run(script, ['start', dir, String(port)], { ...env, S3_DURABLE: '0' })).rejects.toThrow(/durable store/);
});
