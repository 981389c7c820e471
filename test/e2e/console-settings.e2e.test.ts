import { createDamClient } from '@dam/client';
import { makePng, scaled, waitFor } from '@dam/testing';
import * as ui from '../../web/console/test/browser';
import { searchBody } from '../../web/console/src/lib/search';
import { ADMIN, useSuite } from './suite';

/**
 * The console's Settings and Schemas pages (issue 34) in a real browser against the suite: the ADMIN adds a custom
 * conversion to the image profile (previewed on an uploaded image first; saved, there after a reload), a refused name is said in the browser in the API's
 * own words without a request, the webhook secret is rotated (the new one shown once, the overlap said); a schema is
 * checked as it is typed, its form previewed, created. A MANAGER is offered Schemas, not Settings. axe on each page,
 * no sideways scrolling at 375 px. Screenshots: test-artifacts/console/50-53.
 */
const e2e = useSuite({}, { services: ['gateway', 'auth', 'metadata', 'search', 'upload', 'conversion'] });
const MANAGER = { email: 'mina.schema@example.com', password: 'correct-horse-2' };
let browser: ui.Browser;

beforeAll(async () => {
  browser = await ui.startBrowser();
}, 180_000);
e2e.beforeStop(() => browser?.close());

const newPage = (width = 1366) => ui.watchedPage(browser, { width, timeoutMs: scaled(15_000) });

/** A 640 x 480 PNG, uploaded and OK and found by search (the preview offers the images search lists). */
async function uploadImage(dam: ReturnType<typeof createDamClient>): Promise<string> {
  const id = await ui.uploadOriginal(e2e.suite.upload, e2e.jwt, makePng(640, 480), 'gradient.png');
  await waitFor(
    async () => {
      const found = await dam.POST('/api/v1/assets/search', { body: searchBody({ q: '', types: [], statuses: [], sort: 'upload_time:desc', page: 1 }) });
      return (found.data?.results as { id: string; status: string }[] | undefined)?.some((a) => a.id === id && a.status === 'OK');
    },
    { timeoutMs: 60_000, intervalMs: 250, description: 'the image OK and searchable' },
  );
  return id;
}

it('an ADMIN sets conversions and rotates the webhook secret, writes a schema with its preview; a MANAGER gets no Settings', async () => {
  const dam = createDamClient({ baseUrl: e2e.suite.base, token: e2e.jwt });
  await uploadImage(dam);
  const { page, problems, close } = await newPage();
  const patches: string[] = [];
  page.on('request', (r) => r.method() === 'PATCH' && r.url().endsWith('/api/v1/settings') && patches.push(r.postData() ?? ''));
  await ui.signIn(page, e2e.suite.base, ADMIN);
  expect(await ui.mainNav(page).getByRole('link').allInnerTexts()).toEqual(expect.arrayContaining(['Settings', 'Schemas']));
  await ui.mainNav(page).getByRole('link', { name: 'Settings' }).click();
  await page.getByRole('heading', { name: 'Settings', level: 1 }).waitFor();

  // A name the API refuses: said next to the name in the API's words, and nothing is sent.
  const conversions = page.locator('#conversions');
  await conversions.getByLabel('Name').fill('my-thumb');
  await conversions.getByLabel('Width (px)').fill('300');
  await conversions.getByRole('button', { name: 'Add conversion' }).click();
  const apiWords = await dam.PATCH('/api/v1/settings', { body: { conversions: { custom: { 'my-thumb': { width: 300 } } } } });
  const refused = (apiWords.error as { error: { details: { path: string; message: string }[] } }).error.details;
  expect(refused).toEqual([{ path: 'conversions.custom.my-thumb', message: 'a conversion name is 1-30 characters of [A-Za-z0-9]' }]);
  await page.locator('#conv-name-error').filter({ hasText: refused[0]!.message }).waitFor();
  expect(await ui.settled(page, 'document.activeElement && document.activeElement.id', 'conv-name')).toBe('conv-name');
  expect(patches).toEqual([]);

  // A good one, put in the image profile: saved, and there after a reload.
  await conversions.getByLabel('Name').fill('hero');
  await conversions.getByLabel('Width (px)').fill('640');
  await conversions.getByLabel('Height (px)').fill('360');
  await conversions.getByLabel('Fit').selectOption('inside');
  await conversions.getByLabel('Format').selectOption('avif');
  await conversions.getByLabel('Quality (1-100)').fill('70');
  // Previewed on the image before it is saved: Get Conversion of its original with w=640&h=360&fit=inside&format=avif&q=70.
  await conversions.getByLabel('Image', { exact: true }).selectOption({ label: 'gradient.png' });
  await conversions.getByRole('button', { name: 'Preview' }).click();
  await conversions.locator('figcaption').filter({ hasText: '480 × 360 px' }).waitFor();
  await conversions.getByRole('button', { name: 'Add conversion' }).click();
  await conversions.getByRole('status').filter({ hasText: 'hero saved' }).waitFor();
  expect(patches).toHaveLength(1);
  const saved = (await dam.GET('/api/v1/settings')).data!;
  expect(saved.conversions.custom.hero).toEqual({ width: 640, height: 360, fit: 'inside', format: 'avif', quality: 70 });
  expect(saved.conversions.profile.image).toContain('hero');
  await page.reload();
  await page.locator('tr[data-conversion="hero"]').filter({ hasText: '640 × 360' }).waitFor();
  expect(await page.locator('#profile-image').getByLabel('hero').isChecked()).toBe(true);
  await ui.expectAccessible(page, 'settings page');
  await ui.screenshot(page, '50-settings.png');

  // A URL the browser cannot judge (inside the network): the API's 400 detail shown next to the URLs.
  const inside = 'http://169.254.169.254/latest/meta-data';
  const insideAnswer = await dam.PATCH('/api/v1/settings', { body: { webhooks: { urls: [inside] } } });
  const insideDetail = (insideAnswer.error as { error: { details: { path: string; message: string }[] } }).error.details[0]!;
  expect(insideDetail.path).toBe('webhooks.urls.0');
  await page.getByRole('textbox', { name: 'Webhook URLs' }).fill(inside);
  await page.getByRole('button', { name: 'Save URLs' }).click();
  await page
    .locator('#webhook-urls-error')
    .filter({ hasText: `0: ${insideDetail.message}` })
    .waitFor();

  // The webhook secret: rotated after confirming, the new one shown once with the overlap said.
  const oldSecret = saved.webhooks.secret;
  await page.getByRole('button', { name: 'Rotate secret' }).click();
  await page.getByRole('button', { name: 'Yes, rotate' }).click();
  const shown = page.getByLabel('New signing secret (shown once)');
  await shown.waitFor();
  const rotated = (await dam.GET('/api/v1/settings')).data!;
  expect(await shown.inputValue()).toBe(rotated.webhooks.secret);
  expect(rotated.webhooks.secret).toMatch(/^whsec_/);
  expect(rotated.webhooks.previous_secret).toBe(oldSecret);
  await page.getByText('The old one signs too until').waitFor();
  await page.getByRole('button', { name: 'Copy secret' }).waitFor();
  await ui.expectAccessible(page, 'settings page with a new secret');
  await ui.screenshot(page, '51-webhook-secret.png');
  await page.reload();
  await page.getByRole('heading', { name: 'Webhooks' }).waitFor();
  expect(await page.getByLabel('New signing secret (shown once)').count()).toBe(0);
  await page.getByText('The previous secret signs too until').waitFor();

  // Schemas: checked as typed, the form previewed, created.
  await ui.mainNav(page).getByRole('link', { name: 'Schemas' }).click();
  await page.getByRole('heading', { name: 'Schemas', level: 1 }).waitFor();
  await page.locator('tr[data-schema="0"]').waitFor();
  await page.getByRole('button', { name: 'New schema' }).click();
  const json = page.getByLabel('JSON Schema (draft 2020-12)');
  await json.fill('{"type": "object", "properties": {"camera": ');
  await page.locator('#schema-json-error').filter({ hasText: 'Not valid JSON' }).waitFor();
  await json.fill('{"type": "object", "properties": {"camera": {"type": "strnig"}}}');
  await page.locator('#schema-json-error').filter({ hasText: 'schema.properties.camera.type' }).waitFor();
  await json.fill('{"type": "object", "required": ["camera"], "properties": {"camera": {"enum": ["Nikon", "Leica"]}, "rating": {"type": "integer"}}}');
  await page.getByLabel('Service properties').fill('{"camera": {"ui": {"label": "Camera body"}}}');
  await page.getByLabel('Name', { exact: true }).fill('cameras');
  const preview = page.locator('[data-preview="schema-form"]');
  await preview.getByLabel('Camera body (required)').selectOption('Leica');
  await preview.getByLabel('Rating').waitFor();
  await page.locator('[data-schema-check]').filter({ hasText: 'Valid' }).waitFor();
  await ui.expectAccessible(page, 'schema editor');
  await ui.screenshot(page, '52-schema-editor.png');
  await page.getByRole('button', { name: 'Create schema' }).click();
  await page.getByRole('status').filter({ hasText: '(cameras) saved' }).waitFor();
  await page.locator('tr', { hasText: 'cameras' }).waitFor();
  const schemas = (await dam.GET('/api/v1/schemas')).data!.items;
  expect(schemas.find((s) => s.name === 'cameras')?.service_properties).toEqual({ camera: { ui: { label: 'Camera body' } } });
  expect(await problems()).toEqual([]);
  await close();

  // At a phone's width: both pages read without sideways scrolling.
  const phone = await newPage(375);
  await ui.signIn(phone.page, e2e.suite.base, ADMIN);
  for (const name of ['settings', 'schemas']) {
    await phone.page.goto(`${e2e.suite.base}/console/${name}`);
    await phone.page.getByRole('heading', { name: name === 'settings' ? 'Settings' : 'Schemas', level: 1 }).waitFor();
    await phone.page.locator(name === 'settings' ? 'tr[data-conversion="hero"]' : 'tr[data-schema="0"]').waitFor();
    await ui.expectNoSidewaysScroll(phone.page, `${name} at 375 px`);
    await ui.expectAccessible(phone.page, `${name} at 375 px`);
  }
  await ui.screenshot(phone.page, '53-schemas-phone.png');
  expect(await phone.problems()).toEqual([]);
  await phone.close();

  // A MANAGER (MANAGE_SCHEMAS, not MANAGE_SETTINGS): Schemas offered, Settings neither offered nor usable at its address.
  expect((await dam.POST('/api/v1/users', { body: { ...MANAGER, first_name: 'Mina', last_name: 'Schema', role_id: 2 } })).response.status).toBe(201);
  const manager = await newPage();
  await ui.signIn(manager.page, e2e.suite.base, MANAGER);
  const links = await ui.mainNav(manager.page).getByRole('link').allInnerTexts();
  expect(links).toContain('Schemas');
  expect(links).not.toContain('Settings');
  await manager.page.goto(`${e2e.suite.base}/console/settings`);
  await manager.page.getByRole('alert').filter({ hasText: 'needs the MANAGE_SETTINGS permission' }).waitFor();
  expect(await manager.problems()).toEqual([]);
  await manager.close();
}, 120_000);
