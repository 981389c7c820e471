/**
 * Image throughput (issue 7): conversions per second with `count` images in flight. The suite: `count` stored
 * images re-processed at once with `POST /process` (three custom conversions each), from the requests to the
 * last job COMPLETED. Against plain sharp doing the same conversions of the same images at the same
 * concurrency (in memory, no storage), and ImageMagick `convert` (when installed: `apt-get install imagemagick`).
 * Runs against a suite started with deploy/local/up; prints one JSON line.
 *   pnpm exec tsx bench/image-throughput.bench.ts [count=20] [megapixels=12]
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import {
  api,
  applySettings,
  login,
  meterSuiteCpu,
  photo,
  profileSpecs,
  sharpConvert,
  untilJobsDone,
  untilOk,
  uploadFiles,
  totalCpu,
  type ConversionSpec,
} from './support';

const exec = promisify(execFile);
const count = Number(process.argv[2] ?? 20);
const megapixels = Number(process.argv[3] ?? 12);
const KEYS = ['thumb', 'medium', 'large'];
const SETTINGS = {
  conversions: {
    custom: {
      thumb: { width: 200, height: 200, fit: 'cover', format: 'webp', quality: 80 },
      medium: { width: 800, fit: 'inside', format: 'jpeg', quality: 80 },
      large: { width: 1600, fit: 'inside', format: 'webp', quality: 80 },
    },
    profile: { image: KEYS },
  },
};

async function viaService(jwt: string, ids: string[]): Promise<number> {
  const started = Date.now();
  const jobs = await Promise.all(
    ids.map(async (id) => {
      const res = await api(jwt, 'POST', `/api/v1/assets/${id}/process`, { keys: KEYS });
      if (res.status !== 202) throw new Error(`process answered ${res.status}: ${JSON.stringify(res.body)}`);
      return res.body.job_id as number;
    }),
  );
  return (await untilJobsDone(jwt, jobs)) - started;
}

async function plainSharp(files: Buffer[], specs: ConversionSpec[]): Promise<number> {
  const started = performance.now();
  await Promise.all(
    files.map(async (bytes) => {
      for (const spec of specs) await sharpConvert(bytes, spec);
    }),
  );
  return performance.now() - started;
}

/** The same three outputs with ImageMagick, `count` processes in flight; undefined when it is not installed. */
async function imageMagick(files: Buffer[]): Promise<number | undefined> {
  try {
    const { stdout } = await exec('convert', ['-version']);
    if (!stdout.includes('ImageMagick')) return undefined;
  } catch {
    return undefined;
  }
  const dir = await mkdtemp(path.join(tmpdir(), 'bench-im-'));
  try {
    await Promise.all(files.map((bytes, i) => writeFile(path.join(dir, `${i}.jpg`), bytes)));
    const started = performance.now();
    await Promise.all(
      files.map(async (_, i) => {
        const input = path.join(dir, `${i}.jpg`);
        await exec('convert', [
          input,
          '-auto-orient',
          '-resize',
          '200x200^',
          '-gravity',
          'center',
          '-extent',
          '200x200',
          '-quality',
          '80',
          path.join(dir, `${i}-thumb.webp`),
        ]);
        await exec('convert', [input, '-auto-orient', '-resize', '800x', '-quality', '80', path.join(dir, `${i}-medium.jpg`)]);
        await exec('convert', [input, '-auto-orient', '-resize', '1600x', '-quality', '80', path.join(dir, `${i}-large.webp`)]);
      }),
    );
    return performance.now() - started;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const jwt = await login();
  await applySettings(jwt, SETTINGS);
  const specs = await profileSpecs(jwt);
  const files = await Promise.all(Array.from({ length: count }, (_, i) => photo(i, megapixels)));
  const ids = await uploadFiles(
    jwt,
    files.map((bytes, i) => ({ bytes, name: `throughput-${i}.jpg` })),
  );
  await untilOk(jwt, ids);
  const meter = meterSuiteCpu();
  const service = await viaService(jwt, ids);
  const serviceCpu = meter.stop();
  const sharpCpuBefore = process.cpuUsage();
  const sharpMs = await plainSharp(files, specs);
  const sharpCpu = process.cpuUsage(sharpCpuBefore);
  const magickMs = await imageMagick(files);
  const conversions = count * specs.length;
  const perSecond = (ms: number) => Math.round((conversions / (ms / 1000)) * 100) / 100;
  console.log(
    JSON.stringify({
      bench: 'image-throughput',
      images: count,
      megapixels,
      conversions,
      service_per_s: perSecond(service),
      sharp_per_s: perSecond(sharpMs),
      imagemagick_per_s: magickMs === undefined ? 'not installed' : perSecond(magickMs),
      service_vs_sharp: Math.round((sharpMs / service) * 100) / 100,
      // Where the CPU went (seconds): every service and piece of infrastructure during the suite's run, and the
      // bench process (sharp's threads) during plain sharp's.
      cpu_s: {
        suite: totalCpu(serviceCpu),
        suite_by_process: serviceCpu,
        plain_sharp: Math.round((sharpCpu.user + sharpCpu.system) / 1e4) / 100,
      },
    }),
  );
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
