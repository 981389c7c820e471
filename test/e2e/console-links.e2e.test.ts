import { createDamClient } from '@dam/client';
import { makePng, scaled, waitFor } from '@dam/testing';
import { expectAccessible, screenshot, signIn, startBrowser, uploadOriginal, watchedPage, type Browser } from '../../web/console/test/browser';
import { ADMIN, useSuite } from './suite';

/**
 * The console's link builder (CONTRACT §15, issue 33) in a real browser against the suite: an image's asset page
 * builds a cdn link with w=100 and format=webp, the signed URL carries them between accessId and signature, the
 * image the edge serves for it is 100 px wide and WebP, the copy button copies it; an invalid quality shows the
 * API's message next to the field; an object_storage link disables the transform fields and carries none.
 */
const e2e = useSuite({}, { services: ['gateway', 'upload', 'metadata', 'conversion', 'link-signing', 'auth'] });
let browser: Browser;

beforeAll(async () => {
  browser = await startBrowser();
}, 180_000);
e2e.beforeStop(() => browser?.close());

it('builds a transformed cdn link with a live preview, shows the 400 next to its field, and disables transforms for object_storage', async () => {
  const dam = createDamClient({ baseUrl: e2e.suite.base, token: e2e.jwt });
  const id = await uploadOriginal(e2e.suite.upload, e2e.jwt, makePng(640, 480), 'gradient.png');
  await waitFor(async () => (await dam.GET('/api/v1/assets/{asset_id}/data', { params: { path: { asset_id: id } } })).data?.status === 'OK', {
    timeoutMs: 60_000,
    intervalMs: 250,
    description: 'the image OK',
  });

  const { page, problems, close } = await watchedPage(browser, { clipboardOrigin: e2e.suite.base });
  const timeout = scaled(15_000);
  try {
    await signIn(page, e2e.suite.base, ADMIN);
    await page.goto(`${e2e.suite.base}/console/assets/${id}`);
    await page.getByRole('heading', { name: 'gradient.png', level: 1 }).waitFor();

    const output = page.locator('#link-output');
    /** The link once the builder holds one for the form as it is now (its URL matching `test`). */
    const linkWhere = (test: (url: URL) => boolean, description: string) =>
      waitFor(
        async () => {
          if ((await output.getAttribute('data-state')) !== 'ok') return undefined;
          const url = new URL(await output.inputValue());
          return test(url) ? url : undefined;
        },
        { timeoutMs: 15_000, description },
      );

    // Without transforms the URL keeps the specified shape.
    const plain = await linkWhere((u) => u.searchParams.has('signature'), 'the first link');
    expect([...plain.searchParams.keys()]).toEqual(['key', 'expiry', 'delivery', 'accessId', 'signature']);

    // w=100 and webp: in the URL after accessId, before signature; the picture is what the edge made.
    const webp = page.waitForResponse((r) => r.url().startsWith(e2e.suite.cdn) && r.url().includes('format=webp') && r.request().resourceType() === 'image', {
      timeout,
    });
    await page.getByLabel('Width (px)').fill('100');
    await page.getByLabel('Format').selectOption('webp');
    const built = await linkWhere((u) => u.searchParams.get('w') === '100' && u.searchParams.get('format') === 'webp', 'the link with w=100 and format=webp');
    expect(built.origin).toBe(new URL(e2e.suite.cdn).origin);
    expect([...built.searchParams.keys()]).toEqual(['key', 'expiry', 'delivery', 'accessId', 'w', 'format', 'signature']);
    const served = await webp;
    expect(served.status()).toBe(200);
    expect(served.headers()['content-type']).toBe('image/webp');
    const picture = page.locator(`img[data-link-picture="loaded"]`);
    await picture.waitFor({ timeout });
    expect(await picture.getAttribute('src')).toBe(built.href);
    const natural = (img: unknown) => [(img as { naturalWidth: number }).naturalWidth, (img as { naturalHeight: number }).naturalHeight];
    expect(await picture.evaluate(natural)).toEqual([100, 75]);
    await page.getByText('100 × 75 px').waitFor();

    await page.getByRole('button', { name: 'Copy link' }).click();
    await page.getByRole('status').filter({ hasText: 'Link copied' }).waitFor();
    expect(await page.evaluate('navigator.clipboard.readText()')).toBe(built.href);
    await expectAccessible(page, 'asset page with the link builder');
    await screenshot(page, '11-link-builder.png');

    // An invalid quality: the API's 400 next to the quality field, no link.
    const quality = page.getByLabel('Quality (1-100)');
    await quality.fill('101');
    const qError = page.locator('#link-q-error');
    await qError.waitFor({ timeout });
    expect(await qError.innerText()).not.toBe('');
    expect(await quality.getAttribute('aria-invalid')).toBe('true');
    expect(await output.inputValue()).toBe('');
    expect(await page.getByRole('button', { name: 'Copy link' }).isDisabled()).toBe(true);

    // object_storage: the transform fields disabled, none of them sent (the invalid quality included).
    await page.getByLabel('Link type').selectOption('object_storage');
    const presigned = await linkWhere((u) => !u.searchParams.has('accessId'), 'the object_storage link');
    expect(['w', 'format', 'q'].filter((p) => presigned.searchParams.has(p))).toEqual([]);
    expect(await page.getByLabel('Width (px)').isDisabled()).toBe(true);
    expect(await qError.count()).toBe(0);
    expect(await page.locator('img[data-link-picture]').count()).toBe(0);

    expect(await problems()).toEqual([]);
  } finally {
    await close();
  }
}, 120_000);
