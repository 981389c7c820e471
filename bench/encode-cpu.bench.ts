/**
 * Encoder effort (sixteenth session): CPU and bytes of the `smart_imaging` rendition (WebP q82, at most 1920 px,
 * never enlarged) at each WebP effort, on the load benchmark's images (sharp-made JPEG photos of 0.05-3 MP) and on
 * any files named on the command line. sharp alone, in this process, one libvips thread as the conversion service
 * runs it: no suite needed. Prints one JSON line.
 *   pnpm exec tsx bench/encode-cpu.bench.ts [runs=20] [file ...]
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import { photo } from './support';

const runs = Number(process.argv[2] ?? 20);
const files = process.argv.slice(3);
const EFFORTS = [4, 3, 2, 1, 0];

sharp.concurrency(1);
sharp.cache(false);

const cpuMs = (): number => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};

const smartImaging = (bytes: Buffer, effort: number): Promise<Buffer> =>
  sharp(bytes).rotate().resize({ width: 1920, height: 1920, fit: 'inside', withoutEnlargement: true }).webp({ quality: 82, effort }).toBuffer();

async function main(): Promise<void> {
  const images: Array<{ name: string; bytes: Buffer }> = [];
  for (const [i, mp] of [0.05, 0.3, 1, 3].entries()) images.push({ name: `photo ${mp} MP`, bytes: await photo(i + 1, mp) });
  for (const file of files) images.push({ name: path.basename(file), bytes: readFileSync(file) });
  const results = [];
  for (const { name, bytes } of images) {
    const { width, height } = await sharp(bytes).metadata();
    const row: Record<string, { cpuMs: number; bytes: number }> = {};
    for (const effort of EFFORTS) {
      await smartImaging(bytes, effort); // warm
      const start = cpuMs();
      let size = 0;
      for (let r = 0; r < runs; r++) size = (await smartImaging(bytes, effort)).length;
      row[`effort${effort}`] = { cpuMs: Math.round(((cpuMs() - start) / runs) * 10) / 10, bytes: size };
    }
    const base = row.effort4!;
    const two = row.effort2!;
    results.push({
      name,
      size: `${width}x${height}`,
      ...row,
      effort2vs4: { cpu: Math.round((two.cpuMs / base.cpuMs) * 100) / 100, bytes: Math.round((two.bytes / base.bytes) * 1000) / 1000 },
    });
  }
  console.log(JSON.stringify({ runs, results }));
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
