/* eslint-disable @typescript-eslint/no-explicit-any -- the settings body is untyped JSON */
/**
 * Image latency (issue 7): N 12-megapixel JPEGs uploaded at once, from the first upload request to the last asset
 * `OK`, against a plain script doing the same work with the bare tools at the same concurrency (S3 PUT of the
 * original, GET it back, the profile's conversions with sharp, S3 PUT of each output), and against sharp alone.
 * Runs against a suite started with deploy/local/up; prints one JSON line.
 *   pnpm exec tsx bench/image-latency.bench.ts [count=12] [megapixels=12]
 */
import { randomBytes } from 'node:crypto';
import { Client } from 'minio';
import sharp from 'sharp';

const BASE = process.env.DAM_BASE_URL ?? 'http://127.0.0.1:8080';
const UPLOAD = process.env.DAM_UPLOAD_URL ?? 'http://127.0.0.1:8081';
const count = Number(process.argv[2] ?? 12);
const megapixels = Number(process.argv[3] ?? 12);
const s3 = new URL(process.env.S3_ENDPOINT ?? 'http://127.0.0.1:7480');
const minio = new Client({
  endPoint: s3.hostname,
  port: Number(s3.port || 80),
  useSSL: s3.protocol === 'https:',
  accessKey: process.env.S3_ACCESS_KEY ?? 'localaccess',
  secretKey: process.env.S3_SECRET_KEY ?? 'localsecret123',
  region: 'us-east-1',
  pathStyle: true,
});

/** A photo-like JPEG (gradient plus noise): compresses like a camera picture, not like a flat colour. */
async function photo(seed: number): Promise<Buffer> {
  const width = Math.round(Math.sqrt((megapixels * 1e6 * 4) / 3));
  const height = Math.round((width * 3) / 4);
  const small = Buffer.alloc(400 * 300 * 3);
  for (let i = 0; i < small.length; i++) small[i] = (i * (seed + 7) + (randomBytes(1)[0] ?? 0)) & 0xff;
  return sharp(small, { raw: { width: 400, height: 300, channels: 3 } }).resize(width, height).jpeg({ quality: 88 }).toBuffer();
}

async function login(): Promise<string> {
  const res = await fetch(`${BASE}/api/v1/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: process.env.ADMIN_EMAIL ?? 'admin@example.com', password: process.env.ADMIN_PASSWORD ?? 'admin-password' }),
  });
  return ((await res.json()) as { jwt: string }).jwt;
}

/** The profile's image conversions as the group has them (the bare script makes the same ones). */
async function profile(jwt: string): Promise<Array<{ width?: number; height?: number; fit: string; format: string; quality: number }>> {
  const settings = (await (await fetch(`${BASE}/api/v1/settings`, { headers: { authorization: `Bearer ${jwt}` } })).json()) as any;
  const custom = settings.conversions?.custom ?? {};
  return (settings.conversions?.profile?.image ?? []).filter((k: string) => custom[k]).map((k: string) => ({ fit: 'cover', format: 'webp', quality: 80, ...custom[k] }));
}

async function viaService(jwt: string, files: Buffer[]): Promise<number> {
  const started = performance.now();
  // One upload request with every file (a user may run 8 uploads at once by default; one request has no cap).
  const form = new FormData();
  files.forEach((bytes, i) => form.append(`file${i}`, new Blob([bytes]), `bench-${i}.jpg`));
  const res = await fetch(`${UPLOAD}/api/v1/assets/new/content/original/upload`, { method: 'POST', headers: { authorization: `Bearer ${jwt}` }, body: form });
  if (res.status !== 200) throw new Error(`upload answered ${res.status}: ${await res.text()}`);
  const ids = ((await res.json()) as { files: Array<{ id: string }> }).files.map((f) => f.id);
  await Promise.all(
    ids.map(async (id) => {
      for (;;) {
        const data = (await (await fetch(`${BASE}/api/v1/assets/${id}/data`, { headers: { authorization: `Bearer ${jwt}` } })).json()) as { status: string };
        if (data.status !== 'NOT_READY') return;
        await new Promise((r) => setTimeout(r, 20));
      }
    }),
  );
  return performance.now() - started;
}

async function bare(files: Buffer[], specs: Awaited<ReturnType<typeof profile>>, bucket: string): Promise<number> {
  const started = performance.now();
  await Promise.all(
    files.map(async (bytes, i) => {
      await minio.putObject(bucket, `bench/${i}/original`, bytes, bytes.length);
      const chunks: Buffer[] = [];
      for await (const c of await minio.getObject(bucket, `bench/${i}/original`)) chunks.push(c as Buffer);
      const original = Buffer.concat(chunks);
      for (const [n, spec] of specs.entries()) {
        const out = await sharp(original).rotate().resize({ width: spec.width, height: spec.height, fit: spec.fit as never }).toFormat(spec.format as never, { quality: spec.quality }).toBuffer();
        await minio.putObject(bucket, `bench/${i}/out-${n}`, out, out.length);
      }
    }),
  );
  return performance.now() - started;
}

async function sharpAlone(files: Buffer[], specs: Awaited<ReturnType<typeof profile>>): Promise<number> {
  const started = performance.now();
  await Promise.all(
    files.map(async (bytes) => {
      for (const spec of specs) await sharp(bytes).rotate().resize({ width: spec.width, height: spec.height, fit: spec.fit as never }).toFormat(spec.format as never, { quality: spec.quality }).toBuffer();
    }),
  );
  return performance.now() - started;
}

async function main(): Promise<void> {
  const jwt = await login();
  const specs = await profile(jwt);
  const files = await Promise.all(Array.from({ length: count }, (_, i) => photo(i)));
  const bucket = `bench-${Date.now()}`;
  await minio.makeBucket(bucket, 'us-east-1');
  const service = await viaService(jwt, files);
  const tools = await bare(files, specs, bucket);
  const alone = await sharpAlone(files, specs);
  const round = (ms: number) => Math.round(ms);
  console.log(
    JSON.stringify({
      bench: 'image-latency',
      images: count,
      megapixels,
      profile: specs.length,
      service_ms: round(service),
      bare_tools_ms: round(tools),
      sharp_alone_ms: round(alone),
      service_vs_bare: Number((service / tools).toFixed(2)),
      service_vs_sharp: Number((service / alone).toFixed(2)),
    }),
  );
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
