import sharp from 'sharp';
import { createDamClient, type DamClient } from '@dam/client';
import { scaled, waitFor } from '@dam/testing';
import * as ui from '../../web/console/test/browser';
import { ADMIN, useSuite } from './suite';

/**
 * The console's selection and collections (issue 34) in a real browser against the suite: three assets selected
 * with a click and a shift-click (the keyboard's Shift+Arrow and Space too), SELECTED_ASSETS holding exactly the
 * selection, the three added to a new collection, its page showing them and one removed from it, one asset deleted
 * from the selection bar, links for two listed; axe on each page, at 375 px as well; screenshots in
 * test-artifacts/console/.
 */
const e2e = useSuite({}, { services: ['gateway', 'upload', 'metadata', 'conversion', 'search', 'link-signing', 'auth'] });
const NAMES = ['c-one.png', 'c-two.png', 'c-three.png', 'c-four.png'];
let browser: ui.Browser;
let dam: DamClient;

beforeAll(async () => {
  browser = await ui.startBrowser();
  dam = createDamClient({ baseUrl: e2e.suite.base, token: e2e.jwt });
}, 180_000);
e2e.beforeStop(() => browser?.close());

async function upload(name: string, colour: string): Promise<string> {
  const bytes = await sharp({ create: { width: 160, height: 120, channels: 3, background: colour } })
    .png()
    .toBuffer();
  return ui.uploadOriginal(e2e.suite.upload, e2e.jwt, bytes, name);
}

const basketIds = async (): Promise<string[]> => {
  const { data } = await dam.GET('/api/v1/collections/{collection_id}', { params: { path: { collection_id: 'SELECTED_ASSETS' }, query: { page_size: 100 } } });
  return (data?.items ?? []).map((a) => a.id).sort();
};

it('selects with click, shift-click and keys (kept in SELECTED_ASSETS), builds a collection, removes from it, deletes and links from the selection', async () => {
  const ids = new Map<string, string>();
  for (const [i, name] of NAMES.entries()) ids.set(name, await upload(name, ['#2563eb', '#15803d', '#b45309', '#7c3aed'][i] as string));
  const idOf = (name: string) => ids.get(name) as string;
  for (const id of ids.values()) {
    await waitFor(async () => (await dam.GET('/api/v1/assets/{asset_id}/data', { params: { path: { asset_id: id } } })).data?.status === 'OK', {
      timeoutMs: 60_000,
      intervalMs: 250,
      description: `${id} OK`,
    });
  }

  const { page, problems, close } = await ui.watchedPage(browser, { timeoutMs: scaled(20_000) });
  try {
    await ui.signIn(page, e2e.suite.base, ADMIN);
    // The grid (newest first): c-four, c-three, c-two, c-one, every one OK.
    await waitFor(async () => (await page.locator('.card[data-status="OK"]').count()) === 4, { timeoutMs: 30_000, description: 'four OK cards' });
    const box = (name: string) => page.getByRole('checkbox', { name: `Select ${name}` });
    const bar = page.locator('[data-selection-count]');
    const selectedCount = async () => Number(await bar.getAttribute('data-selection-count'));

    // A click, then a shift-click two cards on: three selected, and SELECTED_ASSETS holds exactly them.
    await box('c-four.png').click();
    await box('c-two.png').click({ modifiers: ['Shift'] });
    await waitFor(async () => (await selectedCount()) === 3, { description: 'three selected' });
    const three = ['c-four.png', 'c-three.png', 'c-two.png'].map(idOf).sort();
    await waitFor(async () => JSON.stringify(await basketIds()) === JSON.stringify(three), { timeoutMs: 15_000, description: 'SELECTED_ASSETS = the three' });
    // The keyboard: Shift+ArrowRight from the last one selects c-one too, Space unselects it again.
    await box('c-two.png').focus();
    await page.keyboard.press('Shift+ArrowRight');
    await waitFor(async () => (await selectedCount()) === 4, { description: 'four selected with Shift+ArrowRight' });
    expect(await ui.settled(page, 'document.activeElement?.getAttribute("aria-label")', 'Select c-one.png')).toBe('Select c-one.png');
    await page.keyboard.press('Space');
    await waitFor(async () => (await selectedCount()) === 3, { description: 'three again after Space' });
    expect(await box('c-one.png').isChecked()).toBe(false);
    await waitFor(async () => JSON.stringify(await basketIds()) === JSON.stringify(three), { timeoutMs: 15_000, description: 'SELECTED_ASSETS back to three' });
    await ui.expectAccessible(page, 'assets with a selection');
    await ui.screenshot(page, '20-selection.png');

    // Add the three to a new collection.
    await page.getByRole('button', { name: 'Add to collection' }).click();
    await page.getByLabel('Collection', { exact: true }).selectOption({ label: 'New collection…' });
    await page.getByLabel('Name', { exact: true }).fill('Spring campaign');
    await page.getByRole('button', { name: 'Add 3' }).click();
    await page.locator('[data-outcome]').filter({ hasText: '3 added to Spring campaign, which now holds 3 / 300.' }).waitFor();
    await ui.expectAccessible(page, 'add to a collection');

    // The collections: the new one with 3 / 300; its page shows the three; one removed.
    await ui.mainNav(page).getByRole('link', { name: 'Collections' }).click();
    await page.getByRole('heading', { name: 'Collections', level: 1 }).waitFor();
    const row = page.locator('tr', { has: page.getByRole('link', { name: 'Spring campaign' }) });
    await row.getByText('3 / 300').waitFor();
    await page
      .locator('tr', { has: page.getByRole('link', { name: 'SELECTED_ASSETS' }) })
      .getByText('3 / 300')
      .waitFor();
    await ui.expectAccessible(page, 'collections');
    await ui.screenshot(page, '21-collections.png');
    // Create a shared one, rename it, delete it.
    await page.getByLabel('Name', { exact: true }).fill('Shared picks');
    await page.getByLabel('Shared with the group').check();
    await page.getByRole('button', { name: 'Create collection' }).click();
    const shared = page.locator('tr', { has: page.getByRole('link', { name: 'Shared picks' }) });
    await shared.getByText('Shared', { exact: true }).waitFor();
    await shared.getByRole('button', { name: 'Rename Shared picks' }).click();
    await shared.getByLabel('New name').fill('Shared picks 2026');
    await shared.getByRole('button', { name: 'Save' }).click();
    const renamed = page.locator('tr', { has: page.getByRole('link', { name: 'Shared picks 2026' }) });
    await renamed.waitFor();
    await ui.expectAccessible(page, 'collections after a rename');
    await renamed.getByRole('button', { name: 'Delete' }).click();
    await renamed.getByRole('button', { name: 'Yes, delete' }).click();
    await page.getByText('Shared picks 2026 deleted; its assets stay').waitFor();
    await waitFor(async () => (await renamed.count()) === 0, { description: 'the shared one deleted' });
    await row.getByRole('link', { name: 'Spring campaign' }).click();
    await page.getByRole('heading', { name: 'Spring campaign', level: 1 }).waitFor();
    await waitFor(async () => (await page.locator('.card[data-asset-id]').count()) === 3, { description: 'three in the collection' });
    await ui.expectAccessible(page, 'a collection');
    await ui.screenshot(page, '22-collection.png');
    await box('c-three.png').click();
    await page.getByRole('button', { name: 'Remove from collection' }).click();
    await waitFor(async () => (await page.locator('.card[data-asset-id]').count()) === 2, { description: 'two left in the collection' });
    expect(await page.locator(`.card[data-asset-id="${idOf('c-three.png')}"]`).count()).toBe(0);
    await page.getByText('2 / 300').first().waitFor();

    // Back on Assets the selection is still the three (read from SELECTED_ASSETS); delete one of them from the bar.
    await ui.mainNav(page).getByRole('link', { name: 'Assets' }).click();
    await waitFor(async () => (await selectedCount()) === 3, { description: 'the selection kept' });
    await page.getByRole('button', { name: 'Clear selection' }).click();
    await waitFor(async () => (await selectedCount()) === 0, { description: 'cleared' });
    await box('c-one.png').click();
    await page.getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('button', { name: 'Yes, delete' }).click();
    await page.locator('[data-outcome]').filter({ hasText: '1 of 1 moved to the trash.' }).waitFor();
    const gone = await dam.GET('/api/v1/assets/{asset_id}/data', { params: { path: { asset_id: idOf('c-one.png') } } });
    expect((gone.error as { error?: { code?: string } } | undefined)?.error?.code).toBe('ASSET_IN_TRASH');
    await waitFor(async () => (await page.locator(`.card[data-asset-id="${idOf('c-one.png')}"]`).count()) === 0, {
      timeoutMs: 30_000,
      description: 'the deleted asset gone from the grid',
    });
    expect(await selectedCount()).toBe(0);

    // Links for two: two signed {cdn} URLs listed, one a line.
    await box('c-four.png').click();
    await box('c-three.png').click({ modifiers: ['Shift'] });
    await waitFor(async () => (await selectedCount()) === 2, { description: 'two selected' });
    await page.getByRole('button', { name: 'Get links' }).click();
    await page.getByRole('button', { name: 'Get 2 links' }).click();
    const list = page.getByLabel('Links, one a line');
    await list.waitFor();
    const urls = (await list.inputValue()).split('\n');
    expect(urls).toHaveLength(2);
    for (const [i, u] of urls.entries()) {
      const url = new URL(u);
      expect(url.origin).toBe(new URL(e2e.suite.cdn).origin);
      expect(url.pathname).toBe(`/api/v1/files/content/${[idOf('c-four.png'), idOf('c-three.png')][i]}`);
      expect(url.searchParams.get('signature')).toBeTruthy();
    }
    expect(await page.getByRole('link', { name: 'Download as a CSV file' }).getAttribute('download')).toBe('links.csv');
    await ui.expectAccessible(page, 'links of the selection');
    await ui.screenshot(page, '23-selection-links.png');
    // A key the assets do not have: each asset's error listed, in the API's words.
    await page.getByLabel('Key', { exact: true }).fill('nosuchkey');
    await page.getByRole('button', { name: 'Get 2 links' }).click();
    const outcome = page.locator('[data-outcome]');
    await outcome.filter({ hasText: '0 of 2 links made.' }).waitFor();
    expect(await outcome.locator('[data-failed-id]').count()).toBe(2);
    // Process the two (smart_imaging): two jobs, with a link to them.
    await page.getByRole('button', { name: 'Process', exact: true }).click();
    await page.getByRole('checkbox', { name: 'smart_imaging' }).check();
    await page.getByRole('button', { name: 'Process 2' }).click();
    await outcome.filter({ hasText: '2 of 2 queued.' }).filter({ hasText: '2 jobs queued' }).waitFor();

    // A phone's width: nothing wider than the screen, still accessible.
    await page.setViewportSize({ width: 375, height: 800 });
    await page.waitForTimeout(200);
    await ui.expectNoSidewaysScroll(page, 'assets at 375 px');
    await ui.expectAccessible(page, 'assets at 375 px');
    await ui.screenshot(page, '24-selection-375.png');
    await page.goto(`${e2e.suite.base}/console/collections`);
    await page.getByRole('heading', { name: 'Collections', level: 1 }).waitFor();
    await page.getByText('2 / 300').first().waitFor();
    await ui.expectNoSidewaysScroll(page, 'collections at 375 px');
    await ui.expectAccessible(page, 'collections at 375 px');
    await ui.screenshot(page, '25-collections-375.png');

    expect(await problems()).toEqual([]);
  } finally {
    await close();
  }
}, 120_000);
