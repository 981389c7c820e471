import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'minio';
import { run, scriptStopper } from './exec';
import { freePort } from './free-port';
import { infraScript } from './paths';
import type { RunningServer } from './postgres-cluster';

export interface S3Server extends RunningServer {
  endpoint: string;
  accessKey: string;
  secretKey: string;
}

/** A throwaway S3 server (radosgw, or MinIO when installed) on a free port (deploy/infra/s3.sh, ~15 s). */
export async function startS3Server(): Promise<S3Server> {
  const base = mkdtempSync(path.join(os.tmpdir(), 'dam-s3-'));
  const dir = path.join(base, 's3');
  const port = await freePort();
  const monPort = await freePort();
  const accessKey = 'testaccess';
  const secretKey = 'testsecret123';
  // The in-memory store blocks every write once full (no error, a hang): room for the suite's 1 GiB uploads next to
  // everything else running at once. Memory is taken only as objects are stored.
  const env = { S3_ACCESS_KEY: accessKey, S3_SECRET_KEY: secretKey, S3_MON_PORT: String(monPort), S3_MEM_BYTES: String(6 * 1024 ** 3) };
  const script = infraScript('s3.sh');
  try {
    await run(script, ['start', dir, String(port)], env);
  } catch (error) {
    execFileSync(script, ['stop', dir], { stdio: 'ignore' });
    throw error;
  }
  // radosgw creates its pools on the first bucket (~4 s): pay that here, not inside some test's 5 s hook.
  await warmUp(`http://127.0.0.1:${port}`, accessKey, secretKey);
  return { endpoint: `http://127.0.0.1:${port}`, accessKey, secretKey, ...scriptStopper(script, dir, base) };
}

async function warmUp(endpoint: string, accessKey: string, secretKey: string): Promise<void> {
  const url = new URL(endpoint);
  const client = new Client({ endPoint: url.hostname, port: Number(url.port), useSSL: false, accessKey, secretKey, pathStyle: true });
  await client.makeBucket('warm-up', 'us-east-1');
  await client.removeBucket('warm-up');
}
