/**
 * On-demand transforms (issue 7): p50/p99 of Get Conversion with transform parameters through the gateway, for
 * `n` different transforms of one 12-megapixel image made cold (each a cache miss: conversion makes it and
 * stores it), then the same `n` again (each a cache hit). Also the 100-megapixel memory figure: peak RSS of the
 * conversion service while it converts one 100-megapixel JPEG (default profile plus `deepzoom`).
 * Runs against a suite started with deploy/local/up; prints one JSON line.
 *   pnpm exec tsx bench/on-demand.bench.ts [n=40]
 */
import { BASE, api, login, percentile, photo, sampleRss, servicePid, untilJobsDone, untilOk, uploadFiles } from './support';

const n = Number(process.argv[2] ?? 40);

async function timedGet(jwt: string, url: string): Promise<number> {
  const started = performance.now();
  const res = await fetch(`${BASE}${url}`, { headers: { authorization: `Bearer ${jwt}` } });
  const body = Buffer.from(await res.arrayBuffer());
  if (res.status !== 200 || body.length === 0) throw new Error(`${url} answered ${res.status}`);
  return performance.now() - started;
}

const summary = (ms: number[]) => ({ p50_ms: Math.round(percentile(ms, 50) * 10) / 10, p99_ms: Math.round(percentile(ms, 99) * 10) / 10 });

async function memory100(jwt: string): Promise<{ upload_to_ok: { baselineMb: number; peakMb: number }; deepzoom: { baselineMb: number; peakMb: number } }> {
  const big = await photo(1, 100);
  const pid = servicePid('conversion');
  const first = sampleRss(pid, 25);
  const [id] = await uploadFiles(jwt, [{ bytes: big, name: 'hundred-megapixels.jpg' }]);
  await untilOk(jwt, [id ?? '']);
  const uploadToOk = first.stop();
  const second = sampleRss(pid, 25);
  const res = await api(jwt, 'POST', `/api/v1/assets/${id}/process`, { keys: ['deepzoom'] });
  await untilJobsDone(jwt, [res.body.job_id as number]);
  return { upload_to_ok: uploadToOk, deepzoom: second.stop() };
}

async function main(): Promise<void> {
  const jwt = await login();
  const [id] = await uploadFiles(jwt, [{ bytes: await photo(3, 12), name: 'on-demand.jpg' }]);
  await untilOk(jwt, [id ?? '']);
  // Distinct widths make distinct cache keys; a run id keeps them cold across runs on the same suite.
  const base = 200 + (Date.now() % 1000);
  const urls = Array.from({ length: n }, (_, i) => `/api/v1/assets/${id}/conversions/original?w=${base + i}&format=webp&q=80`);
  const cold: number[] = [];
  for (const url of urls) cold.push(await timedGet(jwt, url));
  const cached: number[] = [];
  for (const url of urls) cached.push(await timedGet(jwt, url));
  const memory = await memory100(jwt);
  console.log(
    JSON.stringify({ bench: 'on-demand', transforms: n, source_megapixels: 12, cold: summary(cold), cached: summary(cached), conversion_rss_mb_100mp: memory }),
  );
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
