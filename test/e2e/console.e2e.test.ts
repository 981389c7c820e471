import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http, { type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { createDamClient, type DamClient } from '@dam/client';
import { makeVideo, waitFor } from '@dam/testing';
import * as ui from '../../web/console/test/browser';
import { ADMIN, CORE_SERVICES, useSuite } from './suite';

/**
 * The web console in a real browser (Debian's Chromium through playwright-core) against the whole suite: sign in,
 * upload through the picker (two images dropped, a 20 MiB file chosen with the keyboard and resumed after its
 * connection is cut), the grid until every asset is OK, an asset's page and its data edited, jobs, trash; axe-core
 * on every page (serious and critical violations fail), no CSP violation, no uncaught error. Then picker.js on
 * another origin with nothing but an uploadkey, and the viewers: Process deepzoom from an asset page (the job
 * followed on the jobs page) into OpenSeadragon, a video's hls-video into hls.js, its storyboard addon run from its page
 * (the real frames drawn, one seeking the player). Screenshots: test-artifacts/console/.
 */
const MiB = 1024 * 1024;
const BIG_BYTES = 20 * MiB;
/** The picker's chunk (web/console/src/picker/picker.ts): the cut PATCH is the second one, at this offset. */
const CHUNK = 8 * MiB;

const e2e = useSuite({}, { services: [...CORE_SERVICES, 'transcode'] });
let browser: ui.Browser;
let dam: DamClient;
let tmp: string;

beforeAll(async () => {
  tmp = mkdtempSync(path.join(os.tmpdir(), 'dam-console-e2e-'));
  browser = await ui.startBrowser();
  dam = createDamClient({ baseUrl: e2e.suite.base, token: e2e.jwt });
}, 180_000);
e2e.beforeStop(() => browser?.close());

afterAll(() => {
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

const watchedPage = () => ui.watchedPage(browser);

/** One file through Upload Asset (not the picker): for the viewers' test. */
const uploadDirect = (bytes: Buffer, name: string) => ui.uploadOriginal(e2e.suite.upload, e2e.jwt, bytes, name);

const settled = (id: string) =>
  waitFor(
    async () => {
      const d = await dam.GET('/api/v1/assets/{asset_id}/data', { params: { path: { asset_id: id } } });
      return d.data?.status === 'OK' ? d.data : undefined;
    },
    { timeoutMs: 120_000, intervalMs: 500, description: `${id} OK` },
  );

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
  await ui.expectAccessible(page, 'sign-in page');
  await ui.screenshot(page, '01-sign-in.png');
  await ui.signIn(page, e2e.suite.base, ADMIN);

  // The picker: the large file chosen with the keyboard only, two images dropped, a title and description typed.
  await ui.mainNav(page).getByRole('link', { name: 'Upload' }).click();
  await page.locator('.uppy-Dashboard-inner').waitFor();
  const tus = await ui.watchTus(page, e2e.suite.upload);
  const chooser = await ui.openChooserWithKeyboard(page, '.uppy-Dashboard-browse');
  await chooser.setFiles(bigPath);
  await ui.dropFiles(page, images);
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
  await ui.expectAccessible(page, 'upload page with three files');
  await ui.screenshot(page, '02-picker-ready.png');

  await page.getByRole('button', { name: /^Upload 3 files$/ }).click();
  const uploaded = page.locator('[data-uploaded-asset]');
  await waitFor(async () => (await uploaded.count()) === 3, { timeoutMs: 90_000, intervalMs: 250, description: 'three uploads finished in the picker' }).catch(
    async (err: unknown) => {
      await ui.screenshot(page, 'failed-upload.png');
      const dashboard = await page.locator('.uppy-Dashboard').innerText();
      const calls = tus.map((c) => `${c.method} ${c.url} offset=${c.offset} -> ${c.status} ${c.aborted ? '(cut)' : ''}`).join('\n');
      throw new Error(
        `${String(err)}\npicker says:\n${dashboard}\ntus requests:\n${calls}\nupload log tail:\n${e2e.suite.services.upload?.logs().slice(-15).join('\n')}`,
      );
    },
  );
  await ui.screenshot(page, '03-picker-done.png');

  // The cut PATCH (the second chunk of the large file) was resumed from the server's offset, not from 0.
  const aborted = tus.filter((c) => c.aborted);
  expect(aborted).toHaveLength(1);
  const cutCall = aborted[0] as ui.TusCall;
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
  await ui.mainNav(page).getByRole('link', { name: 'Assets' }).click();
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
  await ui.expectAccessible(page, 'asset grid');
  await ui.screenshot(page, '04-grid.png');

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
  await ui.expectAccessible(page, 'asset page');
  await ui.screenshot(page, '05-asset.png');

  // Jobs: the processing of the uploads, finished.
  await ui.mainNav(page).getByRole('link', { name: 'Jobs' }).click();
  await page.locator('tr[data-status="COMPLETED"]').first().waitFor({ timeout: 30_000 });
  await ui.expectAccessible(page, 'jobs page');
  await ui.screenshot(page, '06-jobs.png');

  // Delete the large file, find it in the trash (ADMIN), undelete it.
  const bigId = byName['survey-scan.bin']?.id as string;
  await page.goto(`${e2e.suite.base}/console/assets/${bigId}`);
  await page.getByRole('button', { name: 'Delete' }).click();
  await page.getByRole('button', { name: 'Yes, delete' }).click();
  await page.getByRole('heading', { name: 'Asset in the trash' }).waitFor();
  await ui.mainNav(page).getByRole('link', { name: 'Trash' }).click();
  const row = page.locator(`tr[data-asset-id="${bigId}"]`);
  await waitFor(async () => (await row.count()) === 1 || (await page.reload(), false), {
    timeoutMs: 20_000,
    intervalMs: 1000,
    description: 'the deleted asset in the trash view',
  });
  await ui.expectAccessible(page, 'trash page');
  await ui.screenshot(page, '07-trash.png');
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
  const { page, context, problems, close } = await watchedPage();
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
    await ui.expectAccessible(page, 'picker.js on another site');
    await ui.screenshot(page, '08-picker-embedded.png');
    expect(await problems()).toEqual([]);
  } finally {
    await close();
    await new Promise((r) => server.close(r));
  }
}, 120_000);

it('processes a deep zoom pyramid from the asset page and shows it in the viewer; plays a video over HLS; shows its storyboard', async () => {
  const [imageId, videoId] = await Promise.all([
    uploadDirect(await png(1600, 1200, '#7c3aed', 'zoom'), 'zoomable.png'),
    makeVideo({ seconds: 3, width: 320, height: 240 }).then((v) => uploadDirect(v, 'clip.mp4')),
  ]);
  await settled(imageId);
  const { page, problems } = await watchedPage();
  await ui.signIn(page, e2e.suite.base, ADMIN);

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
  await ui.expectAccessible(page, 'asset page with the deep zoom viewer');
  await ui.screenshot(page, '09-deepzoom.png');

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
  await ui.expectAccessible(page, 'asset page with the HLS player');
  await ui.screenshot(page, '10-hls.png');

  // The storyboard addon, run from the video's page: its real frames (the cue file over the sprite sheet) drawn, one
  // button per cue, each seeking the player to its time.
  await page.getByText('No storyboard yet').waitFor();
  await page.getByLabel('Run an addon').selectOption('storyboard');
  await page.getByRole('button', { name: 'Run', exact: true }).click();
  await page
    .getByRole('status')
    .filter({ hasText: /storyboard queued as job \d+/ })
    .waitFor();
  await waitFor(
    async () => {
      const d = await dam.GET('/api/v1/assets/{asset_id}/data', { params: { path: { asset_id: videoId } } });
      return d.data?.status === 'OK' && 'storyboard' in d.data.conversions;
    },
    { timeoutMs: 120_000, intervalMs: 500, description: 'the storyboard conversion' },
  );
  const vtt = await fetch(`${e2e.suite.base}/api/v1/assets/${videoId}/content/storyboard/storyboard.vtt`, { headers: { authorization: `Bearer ${e2e.jwt}` } });
  const cues = [...(await vtt.text()).matchAll(/^(\S+) --> \S+\nsprite\.jpg#xywh=(\d+),(\d+),(\d+),(\d+)$/gm)];
  expect(cues.length).toBeGreaterThanOrEqual(3);
  await page.reload();
  const board = page.getByRole('list', { name: `Storyboard of clip.mp4: ${cues.length} frames` });
  await board.waitFor();
  const frames = board.getByRole('button');
  expect(await frames.count()).toBe(cues.length);
  // Each frame shows its cue's region of the sprite, which {cdn} serves as a JPEG.
  const viewBoxes = await board.locator('svg').evaluateAll((svgs) => svgs.map((e) => e.getAttribute('viewBox')));
  expect(viewBoxes).toEqual(cues.map((c) => `${c[2]} ${c[3]} ${c[4]} ${c[5]}`));
  const spriteUrl = (await board.locator('svg image').first().getAttribute('href')) as string;
  expect(spriteUrl.startsWith(e2e.suite.cdn)).toBe(true);
  const sprite = await fetch(spriteUrl);
  expect([sprite.status, sprite.headers.get('content-type')]).toEqual([200, 'image/jpeg']);
  // The second cue's button plays from its start: the player seeks there and takes the focus.
  const second = Math.floor(Number(/(\d+(?:\.\d+)?)$/.exec(cues[1]?.[1] ?? '')?.[1]));
  await frames.nth(1).click();
  expect(await ui.settled(page, 'Math.round(document.querySelector("video.video-main").currentTime)', second)).toBe(second);
  expect(await ui.settled(page, 'document.activeElement.tagName', 'VIDEO')).toBe('VIDEO');
  await ui.expectAccessible(page, 'asset page with the storyboard');
  await page.getByRole('heading', { name: 'Storyboard', exact: true }).scrollIntoViewIfNeeded();
  await ui.screenshot(page, '12-storyboard.png');

  expect(await problems()).toEqual([]);
}, 240_000);
