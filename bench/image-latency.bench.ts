/**
 * Image latency (issue 7): N 12-megapixel JPEGs uploaded at once, from the first upload request to the last asset
 * `OK`, against a plain script doing the same work with the bare tools at the same concurrency (S3 PUT of the
 * original, GET it back, the profile's conversions with sharp, S3 PUT of each output), and against sharp alone.
 * Runs against a suite started with deploy/local/up; prints one JSON line.
 *   pnpm exec tsx bench/image-latency.bench.ts [count=12] [megapixels=12]
 */
import {
  benchMinio,
  login,
  meterSuiteCpu,
  photo,
  profileSpecs,
  sharpConvert,
  untilOk,
  uploadEach,
  uploadFiles,
  totalCpu,
  type ConversionSpec,
} from './support';

const count = Number(process.argv[2] ?? 12);
const megapixels = Number(process.argv[3] ?? 12);
const minio = benchMinio();

/**
 * From the first upload request to the last asset OK (the server's time of its job's end, so polling, which the
 * gateway rate-limits, neither stretches nor cuts the figure). `oneRequest`: every file in one multipart request;
 * otherwise a request per file, at most 8 at once (the per-user cap of concurrent uploads).
 */
async function viaService(jwt: string, files: Buffer[], oneRequest: boolean): Promise<number> {
  const named = files.map((bytes, i) => ({ bytes, name: `bench-${i}.jpg` }));
  const started = Date.now();
  const ids = oneRequest ? await uploadFiles(jwt, named) : await uploadEach(jwt, named);
  return (await untilOk(jwt, ids)) - started;
}

async function bare(files: Buffer[], specs: ConversionSpec[], bucket: string): Promise<number> {
  const started = performance.now();
  await Promise.all(
    files.map(async (bytes, i) => {
      await minio.putObject(bucket, `bench/${i}/original`, bytes, bytes.length);
      const chunks: Buffer[] = [];
      for await (const c of await minio.getObject(bucket, `bench/${i}/original`)) chunks.push(c as Buffer);
      const original = Buffer.concat(chunks);
      for (const [n, spec] of specs.entries()) {
        const out = await sharpConvert(original, spec);
        await minio.putObject(bucket, `bench/${i}/out-${n}`, out, out.length);
      }
    }),
  );
  return performance.now() - started;
}

async function sharpAlone(files: Buffer[], specs: ConversionSpec[]): Promise<number> {
  const started = performance.now();
  await Promise.all(
    files.map(async (bytes) => {
      for (const spec of specs) await sharpConvert(bytes, spec);
    }),
  );
  return performance.now() - started;
}

async function main(): Promise<void> {
  const jwt = await login();
  const specs = await profileSpecs(jwt);
  const files = await Promise.all(Array.from({ length: count }, (_, i) => photo(i, megapixels)));
  const bucket = `bench-${Date.now()}`;
  await minio.makeBucket(bucket, 'us-east-1');
  const meter = meterSuiteCpu();
  const service = await viaService(jwt, files, false);
  const serviceCpu = meter.stop();
  const serviceOneRequest = await viaService(jwt, files, true);
  const bareMeter = meterSuiteCpu();
  const bareCpuBefore = process.cpuUsage();
  const tools = await bare(files, specs, bucket);
  const bareCpu = process.cpuUsage(bareCpuBefore);
  const bareStore = bareMeter.stop();
  const alone = await sharpAlone(files, specs);
  const round = (ms: number) => Math.round(ms);
  console.log(
    JSON.stringify({
      bench: 'image-latency',
      images: count,
      megapixels,
      profile: specs.length,
      service_ms: round(service),
      service_one_request_ms: round(serviceOneRequest),
      bare_tools_ms: round(tools),
      sharp_alone_ms: round(alone),
      service_vs_bare: Number((service / tools).toFixed(2)),
      one_request_vs_bare: Number((serviceOneRequest / tools).toFixed(2)),
      service_vs_sharp: Number((service / alone).toFixed(2)),
      // Where the CPU went (seconds): every service and piece of infrastructure during the request-per-file run
      // (its polling included), and the bench process plus the S3 server during the bare tools' run.
      cpu_s: {
        suite: totalCpu(serviceCpu),
        suite_by_process: serviceCpu,
        bare_tools: totalCpu({ ...bareStore, bench: (bareCpu.user + bareCpu.system) / 1e6 }),
      },
    }),
  );
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
