import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http, { type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { createDamClient, type DamClient } from '@dam/client';
import { makeVideo, waitFor } from '@dam/testing';
import {
  axeViolations,
  blocking,
  dropFiles,
  ensureConsoleBuilt,
  launchChromium,
  openChooserWithKeyboard,
  watchTus,
  type Browser,
  type BrowserContext,
  type Page,
  type TusCall,
} from '../../web/console/test/browser';
import { ADMIN, CORE_SERVICES, useSuite } from './suite';

/**
 * The web console in a real browser (Debian's Chromium through playwright-core) against the whole suite: sign in,
 * upload through the picker (two images dropped, a 20 MiB file chosen with the keyboard and resumed after its
 * connection is cut), the grid until every asset is OK, an asset's page and its data edited, jobs, trash; axe-core
 * on every page (serious and critical violations fail), no CSP violation, no uncaught error. Then picker.js on
 * another origin with nothing but an uploadkey, and the viewers: Process deepzoom from an asset page (the job
 * followed on the jobs page) into OpenSeadragon, a video's hls-video into hls.js. Screenshots: test-artifacts/console/.
 */
const ARTIFACTS = path.resolve(__dirname, '../../test-artifacts/console');
const MiB = 1024 * 1024;
const BIG_BYTES = 20 * MiB;
/** The picker's chunk (web/console/src/picker/picker.ts): the cut PATCH is the second one, at this offset. */
const CHUNK = 8 * MiB;

const e2e = useSuite({}, { services: [...CORE_SERVICES, 'transcode'] });
let browser: Browser;
let dam: DamClient;
let tmp: string;

beforeAll(async () => {
  ensureConsoleBuilt();
  mkdirSync(ARTIFACTS, { recursive: true });
  tmp = mkdtempSync(path.join(os.tmpdir(), 'dam-console-e2e-'));
  browser = await launchChromium();
  dam = createDamClient({ baseUrl: e2e.suite.base, token: e2e.jwt });
}, 180_000);
e2e.beforeStop(() => browser?.close());

afterAll(() => {
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

interface Watched {
  page: Page;
  context: BrowserContext;
  /** Uncaught errors of the page and CSP violations it reported. */
  problems(): Promise<string[]>;
}

/** A fresh context whose page reports every CSP violation and uncaught error. */
async function watchedPage(): Promise<Watched> {
  const context = await browser.newContext({ viewport: { width: 1366, height: 900 } });
  // Through the DevTools protocol, before any script of the page: the page's CSP does not apply to it.
  await context.addInitScript(`
    window.__cspViolations = [];
    document.addEventListener('securitypolicyviolation', (e) => window.__cspViolations.push(e.violatedDirective + ' ' + e.blockedURI));
  `);
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (err) => errors.push(`uncaught: ${err.message}`));
  return {
    page,
    context,
    async problems() {
      const csp = (await page.evaluate('window.__cspViolations || []')) as string[];
      return [...errors, ...csp.map((c) => `CSP violation: ${c}`)];
    },
  };
}

/** True once every finite animation of the page has ended; a spinner's never does, so it does not count. */
const ANIMATIONS_ENDED = "document.getAnimations().every((a) => a.playState !== 'running' || a.effect?.getTiming().iterations === Infinity)";

async function expectAccessible(page: Page, what: string): Promise<void> {
  // axe reads colours as drawn: mid-transition (Uppy fades its panels in) a button has part of its contrast, so
  // finite animations end first. Polled from here, one evaluate at a time (the string is evaluated within that
  // DevTools call, which the page's CSP does not govern), not with page.waitForFunction: given a string, that
  // evaluates it again inside the page on each poll after the first, with eval, which the console's CSP refuses
  // (an EvalError the page reports, on a machine slow enough for the animations to outlast the first check).
  await waitFor(async () => (await page.evaluate(ANIMATIONS_ENDED)) === true, { timeoutMs: 5000, description: 'finite animations ended' }).catch(
    () => undefined,
  );
  let violations = blocking(await axeViolations(page));
  // A state Uppy passes through (its header's back button while a panel closes) can be caught once: what stays a
  // second later is what a user sees.
  if (violations.length) {
    await page.waitForTimeout(1000);
    violations = blocking(await axeViolations(page));
  }
  if (violations.length) throw new Error(`${what}: serious/critical accessibility violations:\n${JSON.stringify(violations, null, 2)}`);
}

async function signIn(page: Page): Promise<void> {
  await page.goto(`${e2e.suite.base}/console/`);
  await page.getByLabel('Email').fill(ADMIN.email);
  await page.getByLabel('Password').fill(ADMIN.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Assets', level: 1 }).waitFor();
}

/** One file through Upload Asset (not the picker): for the viewers' test. */
async function uploadDirect(bytes: Buffer, name: string): Promise<string> {
  const form = new FormData();
  form.append('file', new Blob([bytes]), name);
  const res = await fetch(`${e2e.suite.upload}/api/v1/assets/new/content/original/upload`, {
    method: 'POST',
    headers: { authorization: `Bearer ${e2e.jwt}` },
    body: form,
  });
  if (res.status !== 200) throw new Error(`upload answered ${res.status}: ${await res.text()}`);
  return ((await res.json()) as { files: { id: string }[] }).files[0]?.id as string;
}

const settled = (id: string) =>
  waitFor(
    async () => {
      const d = await dam.GET('/api/v1/assets/{asset_id}/data', { params: { path: { asset_id: id } } });
      return d.data?.status === 'OK' ? d.data : undefined;
    },
    { timeoutMs: 120_000, intervalMs: 500, description: `${id} OK` },
  );

const shot = (page: Page, name: string) => page.screenshot({ path: path.join(ARTIFACTS, name), fullPage: true });

async function png(width: number, height: number, colour: string, text: string): Promise<Buffer> {
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}"><rect width="100%" height="100%" fill="${colour}"/><circle cx="${width / 3}" cy="${height / 2}" r="${height / 4}" fill="#fff"/><text x="55%" y="55%" font-size="48" fill="#000">${text}</text></svg>`;
  return sharp(Buffer.from(svg)).png().toBuffer();
}

it('signs in, uploads three files through the picker (one resumed after a cut), sees them OK, edits data, and is accessible', async () => {
  const images = [
    { name: 'harbour.png', type: 'image/png', bytes: await png(640, 480, '#2563eb', 'harbour') },
    { name: 'forest.png', type: 'image/png', bytes: await png(480, 640, '#15803d', 'forest') },
  ];
  const big = randomBytes(BIG_BYTES);
  const bigPath = path.join(tmp, 'survey-scan.bin');
  writeFileSync(bigPath, big);
  const { page, problems } = await watchedPage();

  // Sign in.
  await page.goto(`${e2e.suite.base}/console/`);
  await page.getByLabel('Email').waitFor();
  await expectAccessible(page, 'sign-in page');
  await shot(page, '01-sign-in.png');
  await signIn(page);

  // The picker: the large file chosen with the keyboard only, two images dropped, a title and description typed.
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Upload' }).click();
  await page.locator('.uppy-Dashboard-inner').waitFor();
  const tus = await watchTus(page, e2e.suite.upload);
  const chooser = await openChooserWithKeyboard(page, '.uppy-Dashboard-browse');
  await chooser.setFiles(bigPath);
  await dropFiles(page, images);
  await page.locator('.uppy-Dashboard-Item').nth(2).waitFor();
  await page.getByRole('button', { name: 'Edit file harbour.png' }).click();
  // Uppy moves the focus into a file card it opens (debounced), which can land between a fill's focus and its
  // typing: each field is filled until all three hold what was typed.
  const typed = [
    ['Title', 'Harbour at dusk'],
    ['Description', 'Boats, evening light'],
    ['More data (JSON)', '{"rating": 4}'],
  ] as const;
  await waitFor(
    async () => {
      for (const [label, value] of typed) if ((await page.getByLabel(label).inputValue()) !== value) await page.getByLabel(label).fill(value);
      for (const [label, value] of typed) if ((await page.getByLabel(label).inputValue()) !== value) return false;
      return true;
    },
    { description: 'the file card filled' },
  );
  await page.getByRole('button', { name: 'Save changes' }).click();
  await expectAccessible(page, 'upload page with three files');
  await shot(page, '02-picker-ready.png');

  await page.getByRole('button', { name: /^Upload 3 files$/ }).click();
  const uploaded = page.locator('[data-uploaded-asset]');
  await waitFor(async () => (await uploaded.count()) === 3, { timeoutMs: 90_000, intervalMs: 250, description: 'three uploads finished in the picker' }).catch(
    async (err: unknown) => {
      await shot(page, 'failed-upload.png');
      const dashboard = await page.locator('.uppy-Dashboard').innerText();
      const calls = tus.map((c) => `${c.method} ${c.url} offset=${c.offset} -> ${c.status} ${c.aborted ? '(cut)' : ''}`).join('\n');
      throw new Error(
        `${String(err)}\npicker says:\n${dashboard}\ntus requests:\n${calls}\nupload log tail:\n${e2e.suite.services.upload?.logs().slice(-15).join('\n')}`,
      );
    },
  );
  await shot(page, '03-picker-done.png');

  // The cut PATCH (the second chunk of the large file) was resumed from the server's offset, not from 0.
  const aborted = tus.filter((c) => c.aborted);
  expect(aborted).toHaveLength(1);
  const cutCall = aborted[0] as TusCall;
  expect(cutCall.offset).toBe(CHUNK);
  const after = tus.slice(tus.indexOf(cutCall) + 1).filter((c) => c.url === cutCall.url);
  expect(after.find((c) => c.method === 'HEAD')).toMatchObject({ status: 200, responseOffset: CHUNK });
  expect(after.find((c) => c.method === 'PATCH')?.offset).toBe(CHUNK);
  expect(tus.filter((c) => c.url === cutCall.url && c.method === 'PATCH' && c.offset === 0)).toHaveLength(1);
  // The picker authenticates with the uploadkey alone.
  const created = tus.filter((c) => c.method === 'POST');
  expect(created).toHaveLength(3);
  for (const c of created) {
    expect(c.headers['x-upload-key']).toBe(e2e.admin.uploadkey);
    expect(c.headers.authorization).toBeUndefined();
  }

  const ids = (await page.evaluate(`[...document.querySelectorAll('[data-uploaded-asset]')].map((e) => e.getAttribute('data-uploaded-asset'))`)) as string[];
  const assets = await Promise.all(ids.map(async (id) => (await dam.GET('/api/v1/assets/{asset_id}/data', { params: { path: { asset_id: id } } })).data));
  const byName = Object.fromEntries(assets.map((a) => [a?.name, a]));
  expect(byName['survey-scan.bin']).toMatchObject({ size: BIG_BYTES, checksum: createHash('md5').update(big).digest('hex'), creator_id: e2e.admin.user_id });
  expect(byName['harbour.png']?.data).toMatchObject({ title: 'Harbour at dusk', description: 'Boats, evening light', rating: 4 });
  expect(byName['forest.png']?.size).toBe(images[1]?.bytes.length);

  // The grid: all three OK, the images with their thumbnails loaded from {cdn}.
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Assets' }).click();
  const cards = page.locator('.card[data-asset-id]');
  await waitFor(async () => (await page.locator('.card[data-status="OK"]').count()) === 3, {
    timeoutMs: 90_000,
    intervalMs: 500,
    description: 'three OK cards in the grid',
  });
  expect(await cards.count()).toBe(3);
  for (const name of ['harbour.png', 'forest.png']) {
    const img = page.locator('.card', { hasText: name }).locator('img.picture[data-loaded="true"]');
    await img.waitFor({ timeout: 30_000 });
    expect(await img.getAttribute('src')).toMatch(new RegExp(`^${e2e.suite.cdn}/`));
  }
  await page.locator('.facets').getByText('image/png').waitFor();
  await expectAccessible(page, 'asset grid');
  await shot(page, '04-grid.png');

  // An asset's page: the data typed in the picker, edited and saved.
  await page.locator('.card', { hasText: 'harbour.png' }).click();
  await page.getByRole('heading', { name: 'harbour.png', level: 1 }).waitFor();
  const title = page.getByLabel('Title', { exact: true });
  await waitFor(async () => (await title.inputValue()) === 'Harbour at dusk', { description: 'the title field filled from the data' });
  await title.fill('Harbour at night');
  await page.getByLabel('Rating').fill('5');
  await page.getByRole('button', { name: 'Save data' }).click();
  await page
    .getByRole('status')
    .filter({ hasText: /^Saved$/ })
    .waitFor();
  const harbourId = byName['harbour.png']?.id as string;
  const edited = await dam.GET('/api/v1/assets/{asset_id}/data', { params: { path: { asset_id: harbourId } } });
  expect(edited.data?.data).toEqual({ title: 'Harbour at night', description: 'Boats, evening light', rating: 5 });
  await page.locator('[data-conversion] img').first().waitFor();
  await expectAccessible(page, 'asset page');
  await shot(page, '05-asset.png');

  // Jobs: the processing of the uploads, finished.
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Jobs' }).click();
  await page.locator('tr[data-status="COMPLETED"]').first().waitFor({ timeout: 30_000 });
  await expectAccessible(page, 'jobs page');
  await shot(page, '06-jobs.png');

  // Delete the large file, find it in the trash (ADMIN), undelete it.
  const bigId = byName['survey-scan.bin']?.id as string;
  await page.goto(`${e2e.suite.base}/console/assets/${bigId}`);
  await page.getByRole('button', { name: 'Delete' }).click();
  await page.getByRole('button', { name: 'Yes, delete' }).click();
  await page.getByRole('heading', { name: 'Asset in the trash' }).waitFor();
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Trash' }).click();
  const row = page.locator(`tr[data-asset-id="${bigId}"]`);
  await waitFor(async () => (await row.count()) === 1 || (await page.reload(), false), {
    timeoutMs: 20_000,
    intervalMs: 1000,
    description: 'the deleted asset in the trash view',
  });
  await expectAccessible(page, 'trash page');
  await shot(page, '07-trash.png');
  await row.getByRole('button', { name: 'Undelete survey-scan.bin' }).click();
  await page.getByRole('status').filter({ hasText: 'survey-scan.bin restored' }).waitFor();
  const restored = await dam.GET('/api/v1/assets/{asset_id}/data', { params: { path: { asset_id: bigId } } });
  expect(restored.response.status).toBe(200);

  expect(await problems()).toEqual([]);
}, 240_000);

it('picker.js uploads from another site with nothing but an uploadkey', async () => {
  const page_ = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Partner site</title></head>
<body><main><h1>Send us your photos</h1><div id="dam-picker"></div></main>
<script src="${e2e.suite.base}/console/picker.js" data-uploadkey="${e2e.admin.uploadkey}" data-target="#dam-picker"></script>
</body></html>`;
  const server: Server = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(page_);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  // localhost, not 127.0.0.1: another origin than {base} and {upload}.
  const site = `http://localhost:${(server.address() as AddressInfo).port}/`;
  const { page, context, problems } = await watchedPage();
  try {
    await context.addInitScript(`
      window.__uploaded = [];
      document.addEventListener('dam-picker:uploaded', (e) => window.__uploaded.push(e.detail));
    `);
    await page.goto(site);
    await page.locator('.uppy-Dashboard-inner').waitFor();
    const file = path.join(tmp, 'partner-photo.png');
    writeFileSync(file, await png(300, 200, '#b45309', 'partner'));
    const [chooser] = await Promise.all([page.waitForEvent('filechooser'), page.locator('.uppy-Dashboard-browse').first().click()]);
    await chooser.setFiles(file);
    await page.getByRole('button', { name: /^Upload 1 file$/ }).click();
    const [asset] = (await waitFor(
      async () => {
        const got = (await page.evaluate('window.__uploaded')) as { id: string; name: string }[];
        return got.length === 1 ? got : undefined;
      },
      { timeoutMs: 60_000, description: 'the dam-picker:uploaded event' },
    )) as { id: string; name: string }[];
    expect(asset?.name).toBe('partner-photo.png');
    const data = await dam.GET('/api/v1/assets/{asset_id}/data', { params: { path: { asset_id: asset?.id as string } } });
    expect(data.data).toMatchObject({ name: 'partner-photo.png', content_type: 'image/png', creator_id: e2e.admin.user_id });
    await expectAccessible(page, 'picker.js on another site');
    await shot(page, '08-picker-embedded.png');
    expect(await problems()).toEqual([]);
  } finally {
    await context.close();
    await new Promise((r) => server.close(r));
  }
}, 120_000);

it('processes a deep zoom pyramid from the asset page and shows it in the viewer; plays a video over HLS', async () => {
  const [imageId, videoId] = await Promise.all([
    uploadDirect(await png(1600, 1200, '#7c3aed', 'zoom'), 'zoomable.png'),
    makeVideo({ seconds: 3, width: 320, height: 240 }).then((v) => uploadDirect(v, 'clip.mp4')),
  ]);
  await settled(imageId);
  const { page, problems } = await watchedPage();
  await signIn(page);

  // Process: deepzoom as a job, followed on the jobs page until it completes.
  await page.goto(`${e2e.suite.base}/console/assets/${imageId}`);
  await page.getByRole('heading', { name: 'zoomable.png', level: 1 }).waitFor();
  await page.getByRole('checkbox', { name: 'deepzoom' }).check();
  await page.getByRole('button', { name: 'Process', exact: true }).click();
  const queued = await page
    .getByRole('status')
    .filter({ hasText: /Processing deepzoom as job \d+/ })
    .innerText();
  const jobId = /job (\d+)/.exec(queued)?.[1] as string;
  await page.getByRole('link', { name: 'See jobs' }).click();
  await page.locator(`tr[data-job-id="${jobId}"][data-status="COMPLETED"]`).waitFor({ timeout: 60_000 });

  // The viewer reads image.dzi and its tiles through a signed {cdn} link.
  await page.goto(`${e2e.suite.base}/console/assets/${imageId}`);
  const tile = page.waitForResponse((r) => r.url().startsWith(e2e.suite.cdn) && r.url().includes('/image_files/') && r.status() === 200, { timeout: 30_000 });
  await page.getByRole('button', { name: 'Open deep zoom viewer' }).click();
  await page.locator('[data-deepzoom-state="open"]').waitFor({ timeout: 30_000 });
  await tile;
  await page.getByRole('button', { name: 'Zoom in' }).click();
  await expectAccessible(page, 'asset page with the deep zoom viewer');
  await shot(page, '09-deepzoom.png');

  // hls-video (made through the API: the suite's profile makes none), played by hls.js from the signed master playlist.
  await settled(videoId);
  const made = await dam.POST('/api/v1/assets/{asset_id}/process', { params: { path: { asset_id: videoId } }, body: { keys: ['hls-video'] } });
  expect(made.response.status).toBe(202);
  await waitFor(
    async () => {
      const d = await dam.GET('/api/v1/assets/{asset_id}/data', { params: { path: { asset_id: videoId } } });
      return d.data?.status === 'OK' && 'hls-video' in d.data.conversions;
    },
    { timeoutMs: 120_000, intervalMs: 500, description: 'the hls-video conversion' },
  );
  await page.goto(`${e2e.suite.base}/console/assets/${videoId}`);
  await page.getByRole('button', { name: 'Play HLS stream' }).click();
  await page.locator('[data-hls-state="playable"]').waitFor({ timeout: 30_000 });
  await expectAccessible(page, 'asset page with the HLS player');
  await shot(page, '10-hls.png');

  expect(await problems()).toEqual([]);
}, 240_000);
