/**
 * Addons (issue 11): per addon, on a 1920×1280 photo, p50 from the run request (`POST .../addons/{addon}`) to its
 * job COMPLETED (the server's time of the job's end), against the same model called directly in this process (the
 * bare call: tesseract on the file, Human's detector on the decoded pixels, imgly's removeBackground on the JPEG as
 * its README shows); peak RSS of the addon service over the whole run.
 * Both sides get the same warm-up first (WARM_UP runs, default 3, not counted): the bare call's first run loads and
 * compiles, and the service's first jobs after a start are slower too (their figures are printed apart, `cold_ms`).
 * Then one service run and one bare call in turn, `runs` times.
 * Runs against a suite started with deploy/local/up; prints one JSON line.
 *   pnpm exec tsx bench/addons.bench.ts [runs=5] [addons=text_extraction,auto_tagging,face_recognition,background_removal]
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { HumanModels } from '../services/addon/src/adapters/human-models';
import { ANALYSIS_SIDE } from '../services/addon/src/domain/ports';
import { api, login, percentile, sampleRss, servicePid, untilOk, uploadFiles } from './support';

const runs = Number(process.argv[2] ?? 5);
const warmUp = Number(process.env.WARM_UP ?? 3);
/** Some addons only, comma-separated (default: all four). */
const only = process.argv[3]?.split(',');
const FIXTURES = path.join(__dirname, '..', 'test', 'fixtures', 'images');
// The addon service's own copies of the model packages, as it loads them.
const addonRequire = createRequire(path.join(__dirname, '..', 'services', 'addon', 'package.json'));
const WIDTH = 1920;
const HEIGHT = 1280;

/** The 1920×1280 photo each addon is measured on (a fixture photo scaled up; a page of text for OCR). */
async function photoFor(addon: string): Promise<Buffer> {
  if (addon === 'text_extraction') {
    const lines = [
      'Quarterly report of the north warehouse',
      'Received 1,240 pallets in total',
      'Shipped 1,105 pallets to stores',
      'Damaged goods returned 17',
      'Signed by the shift manager',
    ];
    const svg =
      `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${HEIGHT}"><rect width="100%" height="100%" fill="white"/>` +
      lines.map((l, i) => `<text x="120" y="${220 + i * 140}" font-family="DejaVu Sans, sans-serif" font-size="64" fill="black">${l}</text>`).join('') +
      '</svg>';
    return sharp(Buffer.from(svg)).jpeg({ quality: 90 }).toBuffer();
  }
  const fixture = { auto_tagging: 'coffee.jpg', face_recognition: 'astronaut.jpg', background_removal: 'chelsea.jpg' }[addon] as string;
  return sharp(path.join(FIXTURES, fixture)).resize(WIDTH, HEIGHT, { fit: 'cover', position: 'north' }).jpeg({ quality: 90 }).toBuffer();
}

/** Request → job COMPLETED, `count` times one after the other (ms). */
async function viaService(jwt: string, id: string, addon: string, count: number): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < count; i++) {
    const started = Date.now();
    const run = await api(jwt, 'POST', `/api/v1/assets/${id}/addons/${addon}`);
    if (run.status !== 202) throw new Error(`${addon} answered ${run.status}: ${JSON.stringify(run.body)}`);
    for (;;) {
      const { body: job } = await api(jwt, 'GET', `/api/v1/jobs/${run.body.job_id}`);
      if (job.status === 'ERROR') throw new Error(`${addon} job ERROR: ${job.error}`);
      if (job.status === 'COMPLETED') {
        times.push(Date.parse(job.updated_at) - started);
        break;
      }
      // The figure is the server's time of the job's end: polling rarely keeps its cost (gateway, metadata) off the
      // two cores the model runs on.
      await new Promise((r) => setTimeout(r, Number(process.env.POLL_MS ?? 500)));
    }
  }
  return times;
}

/**
 * The same model called directly: a call that runs it once (loaded here first, as the service loads at start), and
 * a clean-up. Human's own input is pixels: for the detectors the decode (at the service's working size) is part of
 * the call.
 */
async function bareCall(addon: string, photo: Buffer): Promise<{ call: () => Promise<unknown>; done: () => void }> {
  const dir = mkdtempSync(path.join(tmpdir(), 'addon-bench-'));
  const file = path.join(dir, 'photo.jpg');
  writeFileSync(file, photo);
  const done = () => rmSync(dir, { recursive: true, force: true });
  if (addon === 'text_extraction') {
    return { call: () => promisify(execFile)('tesseract', [file, 'stdout', '-l', 'eng', '--psm', '3', 'tsv']), done };
  }
  if (addon === 'background_removal') {
    const imgly = addonRequire('@imgly/background-removal-node') as { removeBackground(image: Blob, config: unknown): Promise<Blob> };
    const config = {
      publicPath: `file://${path.dirname(addonRequire.resolve('@imgly/background-removal-node'))}/`,
      model: 'medium',
      output: { format: 'image/png' },
    };
    return { call: async () => (await imgly.removeBackground(new Blob([readFileSync(file)], { type: 'image/jpeg' }), config)).arrayBuffer(), done };
  }
  const models = await HumanModels.load(addon === 'auto_tagging' ? 'objects' : 'faces');
  const call = async () => {
    const { data, info } = await sharp(readFileSync(file))
      .resize(ANALYSIS_SIDE, ANALYSIS_SIDE, { fit: 'inside' })
      .removeAlpha()
      .raw()
      .toBuffer({ resolveWithObject: true });
    return addon === 'auto_tagging' ? models.objects(data, info.width, info.height) : models.faces(data, info.width, info.height);
  };
  return { call, done };
}

/** One bare call's time (ms). */
async function timed(call: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await call();
  return performance.now() - started;
}

async function main(): Promise<void> {
  const jwt = await login();
  const rss = sampleRss(servicePid('addon'));
  const figures: Record<string, unknown> = {};
  for (const addon of only ?? ['text_extraction', 'auto_tagging', 'face_recognition', 'background_removal']) {
    const photo = await photoFor(addon);
    const [id] = await uploadFiles(jwt, [{ bytes: photo, name: `addon-bench-${addon}.jpg` }]);
    await untilOk(jwt, [id as string]);
    const cold = await viaService(jwt, id as string, addon, warmUp);
    const bare = await bareCall(addon, photo);
    for (let i = 0; i < warmUp; i++) await bare.call(); // the same warm-up (first inference) as the service's
    // Interleaved, one run of each in turn: both sides see the same machine (the speed of these shared cores drifts
    // by 10-15 % from one minute to the next, as much as the overhead measured).
    const serviceTimes: number[] = [];
    const bareTimes: number[] = [];
    for (let i = 0; i < runs; i++) {
      serviceTimes.push(...(await viaService(jwt, id as string, addon, 1)));
      bareTimes.push(await timed(bare.call));
    }
    bare.done();
    const service = percentile(serviceTimes, 50);
    const direct = percentile(bareTimes, 50);
    figures[addon] = {
      service_p50_ms: Math.round(service),
      bare_p50_ms: Math.round(direct),
      overhead: Number((service / direct - 1).toFixed(3)),
      cold_ms: cold,
    };
    await api(jwt, 'POST', `/api/v1/assets/${id}/delete`, { keys: ['original'] });
  }
  const memory = rss.stop();
  console.log(
    JSON.stringify({
      bench: 'addons',
      width: WIDTH,
      height: HEIGHT,
      runs,
      ...figures,
      addon_rss_baseline_mb: memory.baselineMb,
      addon_rss_peak_mb: memory.peakMb,
    }),
  );
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
