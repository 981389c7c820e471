import { readFileSync } from 'node:fs';
import http, { type Server } from 'node:http';
import path from 'node:path';
import sharp from 'sharp';
import { createDamClient, type DamClient } from '@dam/client';
import { listen, scaled, waitFor } from '@dam/testing';
import { formatMetric, METRICS, type MetricName } from '../../web/console/src/lib/usage';
import * as ui from '../../web/console/test/browser';
import { ADMIN, useSuite } from './suite';

/**
 * The console's Usage and Webhooks pages and the asset page's similar images (issue 34) in a real browser against
 * the suite: the API-requests chart with a non-zero total after some calls, every metric's chart drawn by uPlot on
 * its canvas at its panel's width (bars in the console's accent where the total is not 0) and labelled with the API's total; the webhook log listing the uploads'
 * deliveries to a local receiver (which refuses one asset's events, so they fail) and filtered by status; a reissue
 * refused in the browser past 7 days, then queued (202, its job) with an ASSET_ADMIN key; an image's page showing
 * its near-duplicate with the distance; face_recognition run from a photograph's page by the addon service (its real
 * result, not one given to the browser) and its box drawn on the picture where it says, at 1366 and 375 px; axe on
 * each page, at 375 px as well; screenshots 40-47 in test-artifacts/console/.
 */
const e2e = useSuite(
  { gateway: { USAGE_FLUSH_MS: '300' } },
  { services: ['gateway', 'upload', 'metadata', 'conversion', 'link-signing', 'auth', 'webhook', 'addon'] },
);
let browser: ui.Browser;
let dam: DamClient;
let receiver: Server;
let hookUrl: string;

beforeAll(async () => {
  // The receiver answers 200, except to events of the file named refused.png (500: they fail after 8 attempts).
  receiver = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      res.statusCode = Buffer.concat(chunks).toString().includes('refused.png') ? 500 : 200;
      res.end();
    });
  });
  hookUrl = `${await listen(receiver)}/hooks`;
  browser = await ui.startBrowser();
  dam = createDamClient({ baseUrl: e2e.suite.base, token: e2e.jwt });
  const { response } = await dam.PATCH('/api/v1/settings', { body: { webhooks: { urls: [hookUrl] } } });
  if (response.status !== 200) throw new Error(`settings answered ${response.status}`);
}, 180_000);
e2e.beforeStop(async () => {
  await browser?.close();
  receiver?.closeAllConnections();
  await new Promise((r) => receiver?.close(r));
});

/** A 160 × 120 picture of diagonal stripes; `shift` brightens it a little (shift 1: 2 bits of perceptual hash apart). */
async function stripes(shift: number): Promise<Buffer> {
  const w = 160;
  const h = 120;
  const raw = Buffer.alloc(w * h * 3);
  for (let y = 0; y < h; y++)
    for (let x = 0; x < w; x++) {
      const v = Math.min(255, ((x + y) % 40 < 20 ? 40 : 200) + Math.round((x / w) * 40) + shift);
      raw.set([v, v, Math.min(255, v + 20)], (y * w + x) * 3);
    }
  return sharp(raw, { raw: { width: w, height: h, channels: 3 } })
    .png()
    .toBuffer();
}

/**
 * What a metric's chart drew, read from the page: uPlot's box against its container's width, the canvas's pixel
 * size, and its pixels that are not transparent (axes, grid, bars) and those in the console's --accent (bars).
 */
const CHART_PIXELS = (metric: MetricName) => `(() => {
  const box = document.querySelector('[data-metric="${metric}"] .usage-chart[role="img"]');
  const root = box && box.querySelector('.uplot');
  const canvas = root && root.querySelector('canvas');
  if (!canvas || !canvas.width || !canvas.height) return null;
  const hex = getComputedStyle(document.documentElement).getPropertyValue('--accent').trim().replace('#', '');
  const accent = [0, 2, 4].map((i) => parseInt(hex.slice(i, i + 2), 16));
  const px = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
  let painted = 0;
  let bars = 0;
  for (let i = 0; i < px.length; i += 4) {
    if (px[i + 3] === 0) continue;
    painted += 1;
    if (px[i + 3] > 200 && accent.every((c, k) => Math.abs(px[i + k] - c) <= 8)) bars += 1;
  }
  return { box: box.clientWidth, root: root.getBoundingClientRect().width, height: root.getBoundingClientRect().height, canvas: [canvas.width, canvas.height], painted, bars };
})()`;
type ChartPixels = { box: number; root: number; height: number; canvas: [number, number]; painted: number; bars: number } | null;

const upload = (name: string, bytes: Buffer) => ui.uploadOriginal(e2e.suite.upload, e2e.jwt, bytes, name);

it('charts API requests with a non-zero total, lists and filters webhook deliveries, reissues, and shows a similar image with its distance', async () => {
  const one = await upload('stripes.png', await stripes(0));
  const two = await upload('refused.png', await stripes(1));
  const face = await upload('astronaut.jpg', readFileSync(path.join(__dirname, '..', 'fixtures', 'images', 'astronaut.jpg')));
  // Get Data through the gateway: authenticated API requests, counted for the group.
  for (const id of [one, two, face]) {
    await waitFor(
      async () => {
        const { data } = await dam.GET('/api/v1/assets/{asset_id}/data', { params: { path: { asset_id: id } } });
        return data?.status === 'OK' && typeof data.metadata?.phash === 'string';
      },
      { timeoutMs: 60_000, intervalMs: 250, description: `${id} OK with a phash` },
    );
  }
  const similar = await dam.GET('/api/v1/assets/{asset_id}/similar', { params: { path: { asset_id: one } } });
  const distance = similar.data?.items.find((i) => i.id === two)?.distance;
  expect(distance).toEqual(expect.any(Number));

  const { page, problems, close } = await ui.watchedPage(browser, { timeoutMs: scaled(20_000) });
  const nav = (name: string) => ui.mainNav(page).getByRole('link', { name, exact: true });
  // The totals of the usage answers the page gets, the latest per metric.
  const apiTotals = new Map<string, number>();
  page.on('response', (res) => {
    const metric = /\/api\/v1\/usage\/([a-z_]+)\?/.exec(res.url())?.[1];
    if (metric && res.status() === 200)
      void res
        .json()
        .then((b: { total: number }) => apiTotals.set(metric, b.total))
        .catch(() => undefined);
  });
  try {
    await ui.signIn(page, e2e.suite.base, ADMIN);

    // Usage: the API-requests chart, its total above 0 once the gateway's counts arrive (Refresh reads them again).
    await nav('Usage').click();
    await page.getByRole('heading', { name: 'Usage', level: 1 }).waitFor();
    const requests = page.locator('[data-metric="api_requests"]');
    await requests.getByRole('heading', { name: 'API requests', level: 2 }).waitFor();
    await waitFor(
      async () => {
        if (Number((await requests.getAttribute('data-total')) ?? '0') > 0) return true;
        await page.getByRole('button', { name: 'Refresh' }).click();
        return false;
      },
      { timeoutMs: scaled(30_000), intervalMs: 1000, description: 'a non-zero API-requests total' },
    );
    // Every metric's chart drawn by uPlot at its panel's width, bars where the total is not 0, its label's total the
    // one the API last answered the page (the page reads them again every 10 s: waited for, as the label follows).
    for (const m of METRICS) {
      const panel = page.locator(`[data-metric="${m.name}"]`);
      await panel.locator('.usage-chart canvas').first().waitFor();
      let chart: ChartPixels = null;
      await waitFor(
        async () => {
          chart = (await page.evaluate(CHART_PIXELS(m.name))) as ChartPixels;
          return chart !== null && chart.painted > 0 && (Number(await panel.getAttribute('data-total')) === 0 || chart.bars > 0);
        },
        { description: `${m.name}'s chart drawn` },
      );
      const drawn = chart as unknown as NonNullable<ChartPixels>;
      expect(Math.abs(drawn.root - drawn.box)).toBeLessThanOrEqual(1);
      expect(drawn.height).toBeCloseTo(190, 0);
      expect(drawn.canvas[0]).toBeGreaterThan(100);
      expect(drawn.canvas[1]).toBeGreaterThan(100);
      await waitFor(
        async () => {
          const answered = apiTotals.get(m.name);
          const label = await panel.getByRole('img').getAttribute('aria-label');
          return answered !== undefined && label?.endsWith(`: total ${formatMetric(answered, m.unit)}`) === true;
        },
        { description: `${m.name}'s label with the API's total` },
      );
    }
    expect(await requests.getByRole('img').getAttribute('aria-label')).toMatch(/^API requests from .* total [1-9]/);
    // A year: hours are not offered, days are chosen.
    await page.getByLabel('Range', { exact: true }).selectOption({ label: 'Last 364 days' });
    expect(await page.getByLabel('Bucket', { exact: true }).inputValue()).toBe('24h');
    expect(await page.locator('#usage-period option[value="1h"]').count()).toBe(0);
    await page.getByLabel('Range', { exact: true }).selectOption({ label: 'Last 24 hours' });
    const me = (await dam.GET('/api/v1/users/me')).data?.user_id as number;
    await page.getByLabel('Whose usage').selectOption({ label: `${ADMIN.email} (user ${me})` });
    await waitFor(async () => Number((await requests.getAttribute('data-total')) ?? '0') > 0, { description: "the ADMIN's own requests" });
    await ui.expectAccessible(page, 'usage');
    await ui.screenshot(page, '40-usage.png');
    // Another window width (one column, wider panels): the charts follow their panels' width (a ResizeObserver).
    const before = (await page.evaluate(CHART_PIXELS('api_requests'))) as NonNullable<ChartPixels>;
    // The canvas marked: the same chart must follow (not a new one, as a period's change would make).
    const canvas = requests.locator('.usage-chart canvas').first();
    await canvas.evaluate((c: unknown) => ((c as { dataset: Record<string, string> }).dataset.marked = 'yes'));
    await page.setViewportSize({ width: 700, height: 900 });
    await waitFor(
      async () => {
        const resized = (await page.evaluate(CHART_PIXELS('api_requests'))) as ChartPixels;
        const same = (await requests.locator('.usage-chart canvas[data-marked="yes"]').count()) === 1;
        return same && resized !== null && Math.abs(resized.box - before.box) > 100 && Math.abs(resized.root - resized.box) <= 1 && resized.bars > 0;
      },
      { description: 'the API-requests chart at its resized panel' },
    );
    await page.setViewportSize({ width: 1366, height: 900 });

    // Webhooks: the uploads' deliveries listed; refused.png's fail after 8 quick attempts; filtered by status.
    await nav('Webhooks').click();
    await page.getByRole('heading', { name: 'Webhooks', level: 1 }).waitFor();
    const rows = page.locator('tr[data-delivery-id]');
    await waitFor(async () => (await page.locator(`tr[data-status="delivered"]:has(a[href$="/assets/${one}"])`).count()) >= 2, {
      timeoutMs: scaled(30_000),
      description: "stripes.png's file-saved and file-processed delivered",
    });
    await waitFor(async () => (await page.locator(`tr[data-status="failed"]:has(a[href$="/assets/${two}"])`).count()) >= 1, {
      timeoutMs: scaled(30_000),
      description: "refused.png's deliveries failed",
    });
    const failedRow = page.locator('tr[data-status="failed"]').first();
    expect(await failedRow.locator('[data-last-answer]').textContent()).toMatch(/^HTTP 500\b/);
    expect(await failedRow.locator('td', { hasText: hookUrl }).count()).toBe(1);
    await failedRow.getByText('8 attempts').click();
    await failedRow.locator('.delivery-attempts li').nth(7).waitFor();
    await ui.expectAccessible(page, 'webhooks');
    await ui.screenshot(page, '41-webhooks.png');
    await page.getByLabel('Status').selectOption('failed');
    await waitFor(async () => (await rows.count()) > 0 && (await page.locator('tr[data-delivery-id]:not([data-status="failed"])').count()) === 0, {
      description: 'only failed deliveries',
    });
    await page.getByLabel('Status').selectOption('delivered');
    await waitFor(async () => (await rows.count()) >= 2 && (await page.locator('tr[data-delivery-id]:not([data-status="delivered"])').count()) === 0, {
      description: 'only delivered ones',
    });
    await ui.expectAccessible(page, 'webhooks filtered');

    // Reissue: 8 days is refused in the browser, in the API's rule; a day with an ASSET_ADMIN key is a 202 and a job.
    const key = await dam.POST('/api/v1/api_keys', { body: { name: 'reissuer', role: 'ASSET_ADMIN' } });
    const secret = key.data?.key as string;
    expect(secret).toBeTruthy();
    const local = (ms: number) => new Date(ms - new Date(ms).getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
    await page.getByLabel('From', { exact: true }).fill(local(Date.now() - 8 * 86_400_000));
    await page.getByLabel('To', { exact: true }).fill(local(Date.now()));
    await page.getByLabel('ASSET_ADMIN API key').fill(secret);
    await page.getByRole('button', { name: 'Reissue' }).click();
    await page.getByText('The range may be at most 7 days.').waitFor();
    await page.getByLabel('From', { exact: true }).fill(local(Date.now() - 3_600_000));
    await page.getByLabel('To', { exact: true }).fill(local(Date.now()));
    await page.getByRole('button', { name: 'Reissue' }).click();
    const queued = page.locator('[data-reissue-job]');
    await queued.waitFor();
    const jobId = Number(await queued.getAttribute('data-reissue-job'));
    const job = await dam.GET('/api/v1/jobs/{job_id}', { params: { path: { job_id: jobId } } });
    expect(job.data?.type).toBe('reissue_callbacks');
    await ui.expectAccessible(page, 'webhooks after a reissue');

    // The asset page: the near-duplicate with its distance, linked.
    await page.goto(`${e2e.suite.base}/console/assets/${one}`);
    await page.getByRole('heading', { name: 'stripes.png', level: 1 }).waitFor();
    const near = page.locator(`[data-similar-id="${two}"]`);
    await near.getByText(`distance ${distance} bit`).waitFor();
    await near.getByRole('link', { name: 'refused.png' }).waitFor();
    await ui.expectAccessible(page, 'asset page with similar images');
    await page.getByRole('heading', { name: 'Similar images' }).scrollIntoViewIfNeeded();
    await ui.screenshot(page, '42-asset-similar.png');

    // Faces: face_recognition run from a photograph's page (the addon service's own models), its box drawn on the
    // picture where the result says, at whatever size the picture is shown (checked again at 375 px).
    await page.goto(`${e2e.suite.base}/console/assets/${face}`);
    await page.getByRole('heading', { name: 'astronaut.jpg', level: 1 }).waitFor();
    await page.getByLabel('Run an addon').selectOption('face_recognition');
    await page.getByRole('button', { name: 'Run', exact: true }).click();
    const faceQueued = await page
      .getByRole('status')
      .filter({ hasText: /face_recognition queued as job \d+/ })
      .innerText();
    const faceJob = Number(/job (\d+)/.exec(faceQueued)?.[1]);
    await waitFor(async () => (await dam.GET('/api/v1/jobs/{job_id}', { params: { path: { job_id: faceJob } } })).data?.status === 'COMPLETED', {
      timeoutMs: scaled(60_000),
      intervalMs: 500,
      description: 'the face_recognition job',
    });
    const found = (await dam.GET('/api/v1/assets/{asset_id}/addons/{addon}', { params: { path: { asset_id: face, addon: 'face_recognition' } } }))
      .data as unknown as {
      faces: { box: { x: number; y: number; width: number; height: number }; confidence: number; person_id: string }[];
    };
    expect(found.faces).toHaveLength(1);
    const [{ box, confidence, person_id }] = found.faces as [(typeof found.faces)[number]];
    const natural = (await dam.GET('/api/v1/assets/{asset_id}/data', { params: { path: { asset_id: face } } })).data?.metadata as {
      width: number;
      height: number;
    };
    const faceOnPicture = async () => {
      const figure = page.locator('figure[data-faces="1"]');
      await figure.locator('img').waitFor();
      await waitFor(
        async () =>
          (await figure.locator('img').evaluate((i: unknown) => (i as { complete: boolean }).complete && (i as { naturalWidth: number }).naturalWidth > 0)) ===
          true,
        { description: 'the picture loaded' },
      );
      const img = await figure.locator('img').boundingBox();
      const rect = await figure.locator('rect[data-face="0"]').boundingBox();
      if (!img || !rect) throw new Error('no picture or no box');
      // The box in the original's pixels, as shares of the picture shown; the stroke adds a pixel each side at most.
      expect(Math.abs(rect.x - (img.x + (img.width * box.x) / natural.width))).toBeLessThanOrEqual(1.5);
      expect(Math.abs(rect.y - (img.y + (img.height * box.y) / natural.height))).toBeLessThanOrEqual(1.5);
      expect(Math.abs(rect.width - (img.width * box.width) / natural.width)).toBeLessThanOrEqual(3);
      expect(Math.abs(rect.height - (img.height * box.height) / natural.height)).toBeLessThanOrEqual(3);
      await page
        .getByRole('listitem')
        .filter({ hasText: `Person ${person_id} (${Math.round(confidence * 100)} %)` })
        .waitFor();
      return img.width;
    };
    await page.reload();
    await page.getByRole('heading', { name: 'Faces', level: 2 }).waitFor();
    await faceOnPicture();
    await ui.expectAccessible(page, 'asset page with faces');
    await page.getByRole('heading', { name: 'Faces', level: 2 }).scrollIntoViewIfNeeded();
    await ui.screenshot(page, '46-asset-faces.png');

    // A phone's width: nothing wider than the screen, still accessible.
    await page.setViewportSize({ width: 375, height: 800 });
    for (const [where, heading, file] of [
      ['usage', 'Usage', '43-usage-375.png'],
      ['webhooks', 'Webhooks', '44-webhooks-375.png'],
      [`assets/${one}`, 'stripes.png', '45-asset-similar-375.png'],
      [`assets/${face}`, 'astronaut.jpg', '47-asset-faces-375.png'],
    ] as const) {
      await page.goto(`${e2e.suite.base}/console/${where}`);
      await page.getByRole('heading', { name: heading, level: 1 }).waitFor();
      if (where === 'usage') {
        await requests.locator('.usage-chart canvas').first().waitFor();
        await waitFor(
          async () => {
            const phone = (await page.evaluate(CHART_PIXELS('api_requests'))) as ChartPixels;
            return phone !== null && phone.bars > 0 && phone.root <= phone.box + 1 && phone.box < 375;
          },
          { description: "the API-requests chart drawn at a phone's width" },
        );
      }
      if (where === 'webhooks') await rows.first().waitFor();
      if (where === `assets/${one}`) await near.getByRole('link', { name: 'refused.png' }).waitFor();
      if (where === `assets/${face}`) expect(await faceOnPicture()).toBeLessThanOrEqual(375);
      await ui.expectNoSidewaysScroll(page, `${where} at 375 px`, { everyElement: true });
      await ui.expectAccessible(page, `${where} at 375 px`);
      await ui.screenshot(page, file);
    }

    expect(await problems()).toEqual([]);
  } finally {
    await close();
  }
}, 240_000);
