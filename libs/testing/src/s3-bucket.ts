import { randomBytes } from 'node:crypto';
import { Client } from 'minio';

export interface TestS3Config {
  endpoint: string;
  accessKey: string;
  secretKey: string;
  bucket: string;
  region: string;
}

const REGION = 'us-east-1';

function shared(): Omit<TestS3Config, 'bucket'> {
  const endpoint = process.env.DAM_TEST_S3_ENDPOINT;
  const accessKey = process.env.DAM_TEST_S3_ACCESS_KEY;
  const secretKey = process.env.DAM_TEST_S3_SECRET_KEY;
  if (!endpoint || !accessKey || !secretKey) {
    const why = process.env.DAM_TEST_NO_S3 === '1' ? ' (DAM_TEST_NO_S3=1 skipped it)' : '';
    throw new Error(`no test S3 server${why}: run through jest or set DAM_TEST_S3_ENDPOINT, _ACCESS_KEY, _SECRET_KEY`);
  }
  return { endpoint, accessKey, secretKey, region: REGION };
}

export function testS3Config(bucket: string): TestS3Config {
  return { ...shared(), bucket };
}

/** The S3_* variables a service reads (docs/internal-interfaces.md), pointed at the test server. */
export function s3Env(bucket: string): Record<'S3_ENDPOINT' | 'S3_ACCESS_KEY' | 'S3_SECRET_KEY' | 'S3_BUCKET' | 'S3_REGION', string> {
  const c = testS3Config(bucket);
  return { S3_ENDPOINT: c.endpoint, S3_ACCESS_KEY: c.accessKey, S3_SECRET_KEY: c.secretKey, S3_BUCKET: c.bucket, S3_REGION: c.region };
}

/** A minio client for the test server (for assertions on stored objects). */
export function testMinioClient(): Client {
  const c = shared();
  const url = new URL(c.endpoint);
  return new Client({
    endPoint: url.hostname,
    port: Number(url.port || (url.protocol === 'https:' ? 443 : 80)),
    useSSL: url.protocol === 'https:',
    accessKey: c.accessKey,
    secretKey: c.secretKey,
    region: c.region,
    pathStyle: true,
  });
}

/** Creates a fresh bucket on the shared test server and returns its name. */
export async function createBucket(prefix = 'test'): Promise<string> {
  const clean = prefix
    .toLowerCase()
    .replace(/[^a-z0-9-]/g, '-')
    .slice(0, 40);
  const name = `${clean}-${randomBytes(5).toString('hex')}`;
  await testMinioClient().makeBucket(name, REGION);
  return name;
}
