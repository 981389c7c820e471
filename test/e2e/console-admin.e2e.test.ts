import { createDamClient } from '@dam/client';
import { scaled, waitFor } from '@dam/testing';
import * as ui from '../../web/console/test/browser';
import { ADMIN, loginResult, useSuite } from './suite';

/**
 * The console's account pages (issue 34) in a real browser against the suite: the ADMIN creates a user (the
 * browser's check and the API's EMAIL_TAKEN next to their fields), changes the role, disables and enables, sets a
 * new password; creates an API key (the secret shown once, gone after a reload), revokes it; rotates the accessID
 * and the upload key after confirming; pages the list of users, deletes one (gone from the list, its session and
 * login answer 401; one's own row cannot be deleted). A MANAGER is not offered Users, and its address says "Not permitted". axe on
 * every page, at desktop width and at a phone's (375 px, no sideways scrolling). Screenshots: test-artifacts/console/.
 */
const e2e = useSuite({}, { services: ['gateway', 'auth', 'metadata', 'search'] });
const MARIA = { email: 'maria.lopez@example.com', password: 'correct-horse-1', first: 'Maria', last: 'Lopez' };
let browser: ui.Browser;

beforeAll(async () => {
  browser = await ui.startBrowser();
}, 180_000);
e2e.beforeStop(() => browser?.close());

const open = () => ui.watchedPage(browser, { timeoutMs: scaled(15_000), clipboardOrigin: e2e.suite.base });

const loginStatus = async (email: string, password: string) =>
  (
    await fetch(`${e2e.suite.base}/api/v1/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, password }),
    })
  ).status;

it('an ADMIN manages users and keys; a MANAGER is not offered Users; every page accessible, also at 375 px', async () => {
  const dam = createDamClient({ baseUrl: e2e.suite.base, token: e2e.jwt });
  const { page, problems } = await open();
  await ui.signIn(page, e2e.suite.base, ADMIN);
  expect(await ui.mainNav(page).getByRole('link').allInnerTexts()).toEqual(expect.arrayContaining(['Assets', 'Upload', 'Jobs', 'Trash', 'Users', 'API keys']));

  // Users: the form checks as the API does, then the API's own EMAIL_TAKEN next to the email.
  await ui.mainNav(page).getByRole('link', { name: 'Users' }).click();
  await page.getByRole('heading', { name: 'Users', level: 1 }).waitFor();
  await page.locator(`tr[data-user-id="${e2e.admin.user_id}"]`).waitFor();
  const form = page.getByRole('form', { name: 'Create a user' });
  await form.getByLabel('Email').fill('maria.lopez');
  await form.getByLabel('Password').fill('short');
  await form.getByRole('button', { name: 'Create user' }).click();
  await form.locator('#user-email-error').filter({ hasText: 'Invalid email address' }).waitFor();
  await form.locator('#user-password-error').filter({ hasText: 'must be at least 8 characters' }).waitFor();
  expect(await ui.settled(page, 'document.activeElement && document.activeElement.id', 'user-email')).toBe('user-email');
  await form.getByLabel('Email').fill(MARIA.email);
  await form.getByLabel('Password').fill(MARIA.password);
  await form.getByLabel('First name').fill(MARIA.first);
  await form.getByLabel('Last name').fill(MARIA.last);
  await form.getByLabel('Role').selectOption({ label: 'USER' });
  await form.getByRole('button', { name: 'Create user' }).click();
  await page
    .getByRole('status')
    .filter({ hasText: `${MARIA.email} created as USER` })
    .waitFor();
  const row = page.locator('tr', { hasText: MARIA.email });
  await row.waitFor();
  const created = await loginResult(e2e.suite.base, MARIA.email, MARIA.password);
  expect(created.role_name).toBe('USER');
  await form.getByLabel('Email').fill(MARIA.email);
  await form.getByLabel('Password').fill(MARIA.password);
  await form.getByRole('button', { name: 'Create user' }).click();
  await form.locator('#user-email-error').filter({ hasText: 'EMAIL_TAKEN' }).waitFor();
  await ui.expectAccessible(page, 'users page');

  // Role: USER → MANAGER; one's own role is refused with the API's words next to the control.
  await row.getByLabel(`Role of ${MARIA.email}`).selectOption({ label: 'MANAGER' });
  await row.getByRole('button', { name: `Save role of ${MARIA.email}` }).click();
  await page
    .getByRole('status')
    .filter({ hasText: `${MARIA.email} is now MANAGER` })
    .waitFor();
  expect((await dam.GET('/api/v1/users/{user_id}', { params: { path: { user_id: created.user_id } } })).data?.role_name).toBe('MANAGER');
  const mine = page.locator(`tr[data-user-id="${e2e.admin.user_id}"]`);
  await mine.getByLabel(`Role of ${ADMIN.email}`).selectOption({ label: 'USER' });
  await mine.getByRole('button', { name: `Save role of ${ADMIN.email}` }).click();
  await mine.getByRole('alert').filter({ hasText: 'CANNOT_MODIFY_SELF' }).waitFor();
  expect(await mine.getByLabel(`Role of ${ADMIN.email}`).inputValue()).toBe('1');

  // Disable (after confirming) and enable; a disabled user's login answers 403.
  await row.getByRole('button', { name: `Disable ${MARIA.email}` }).click();
  await row.getByRole('button', { name: 'Yes, disable' }).click();
  await page.locator(`tr[data-user-id="${created.user_id}"][data-disabled="true"]`).waitFor();
  expect(await loginStatus(MARIA.email, MARIA.password)).toBe(403);
  await row.getByRole('button', { name: `Enable ${MARIA.email}` }).click();
  await page.locator(`tr[data-user-id="${created.user_id}"][data-disabled="false"]`).waitFor();
  expect(await loginStatus(MARIA.email, MARIA.password)).toBe(200);

  // A new password: checked in the browser, then set; the old one stops.
  const newPassword = 'battery-staple-2';
  await row.getByRole('button', { name: `Reset password of ${MARIA.email}` }).click();
  const reset = row.getByLabel(`New password for ${MARIA.email}`);
  await reset.fill('tiny');
  await row.getByRole('button', { name: 'Set password' }).click();
  await row.getByRole('alert').filter({ hasText: 'must be at least 8 characters' }).waitFor();
  await reset.fill(newPassword);
  await row.getByRole('button', { name: 'Set password' }).click();
  await page
    .getByRole('status')
    .filter({ hasText: `New password set for ${MARIA.email}` })
    .waitFor();
  expect(await loginStatus(MARIA.email, MARIA.password)).toBe(401);
  expect(await loginStatus(MARIA.email, newPassword)).toBe(200);
  await ui.expectAccessible(page, 'users page after the changes');
  await ui.screenshot(page, '30-users.png');

  // API keys: the secret once, with a copy button; it works; after a reload it is nowhere; revoked, it answers 401.
  await ui.mainNav(page).getByRole('link', { name: 'API keys' }).click();
  await page.getByRole('heading', { name: 'API keys', level: 1 }).waitFor();
  const keyForm = page.getByRole('form', { name: 'Create an API key' });
  await keyForm.getByLabel('Name').fill('   ');
  await keyForm.getByRole('button', { name: 'Create key' }).click();
  await keyForm.locator('#key-name-error').filter({ hasText: 'Too small: expected string to have >=1 characters' }).waitFor();
  await keyForm.getByLabel('Name').fill('ci-pipeline');
  await keyForm.getByLabel('Role').selectOption('USER');
  await keyForm.getByRole('button', { name: 'Create key' }).click();
  const secret = page.getByLabel('API key', { exact: true });
  await secret.waitFor();
  const key = await secret.inputValue();
  expect(key).toMatch(/^dam_/);
  await page.getByRole('button', { name: 'Copy the API key' }).click();
  await page
    .getByRole('status')
    .filter({ hasText: /^Copied$/ })
    .waitFor();
  expect(await page.evaluate('navigator.clipboard.readText()')).toBe(key);
  const withKey = await fetch(`${e2e.suite.base}/api/v1/users/me`, { headers: { 'x-service-api-key': key } });
  expect(withKey.status).toBe(200);
  const keyRow = page.locator('tr', { hasText: 'ci-pipeline' });
  await keyRow.waitFor();
  await ui.expectAccessible(page, 'API keys page with a new key');
  await ui.screenshot(page, '31-api-key-created.png');
  await page.reload();
  await keyRow.waitFor();
  expect(await page.getByLabel('API key', { exact: true }).count()).toBe(0);
  expect(await page.content()).not.toContain(key);
  await keyRow.getByRole('button', { name: 'Revoke ci-pipeline' }).click();
  await keyRow.getByRole('button', { name: 'Yes, revoke' }).click();
  await page.getByRole('status').filter({ hasText: 'Key ci-pipeline revoked' }).waitFor();
  await keyRow.waitFor({ state: 'detached' });
  expect((await fetch(`${e2e.suite.base}/api/v1/users/me`, { headers: { 'x-service-api-key': key } })).status).toBe(401);

  // accessID: the warning says what stops, Cancel leaves it, confirming rotates it.
  const accessSection = page.locator('[data-section="accessid"]');
  await accessSection.getByText('every cdn link you ever signed').waitFor();
  // From the keyboard: Enter opens the confirm step with the focus on Cancel, Escape closes it (back on the button).
  await accessSection.getByRole('button', { name: 'Rotate accessID' }).focus();
  await page.keyboard.press('Enter');
  await accessSection.getByRole('alert').filter({ hasText: 'Every cdn link you signed stops working' }).waitFor();
  expect(await ui.settled(page, 'document.activeElement.textContent', 'Cancel')).toBe('Cancel');
  await page.keyboard.press('Escape');
  await accessSection.getByRole('button', { name: 'Rotate accessID' }).waitFor();
  expect(await ui.settled(page, 'document.activeElement.textContent', 'Rotate accessID')).toBe('Rotate accessID');
  expect((await loginResult(e2e.suite.base, ADMIN.email, ADMIN.password)).accessID).toBe(e2e.admin.accessID);
  await page.keyboard.press('Enter');
  expect(await ui.settled(page, 'document.activeElement.textContent', 'Cancel')).toBe('Cancel');
  await page.keyboard.press('Shift+Tab');
  expect(await ui.settled(page, 'document.activeElement.textContent', 'Yes, rotate accessID')).toBe('Yes, rotate accessID');
  await page.keyboard.press('Enter');
  await accessSection.getByRole('status').filter({ hasText: 'accessID rotated' }).waitFor();
  const after = await loginResult(e2e.suite.base, ADMIN.email, ADMIN.password);
  expect(after.accessID).not.toBe(e2e.admin.accessID);

  // The upload key: rotated after confirming; the console shows (and uses) the new one.
  const uploadSection = page.locator('[data-section="uploadkey"]');
  await uploadSection.getByText('every upload with it fails').waitFor();
  const oldUploadKey = await uploadSection.getByLabel('Upload key').inputValue();
  await uploadSection.getByRole('button', { name: 'Rotate upload key' }).click();
  await uploadSection.getByRole('button', { name: 'Yes, rotate upload key' }).click();
  await uploadSection.getByRole('status').filter({ hasText: 'Upload key rotated' }).waitFor();
  const newUploadKey = await uploadSection.getByLabel('Upload key').inputValue();
  expect(newUploadKey).not.toBe(oldUploadKey);
  expect((await loginResult(e2e.suite.base, ADMIN.email, ADMIN.password)).uploadkey).toBe(newUploadKey);
  await ui.expectAccessible(page, 'API keys page after the rotations');
  await ui.screenshot(page, '32-api-keys.png');

  // A phone's width: both pages read without sideways scrolling, and stay accessible.
  await page.setViewportSize({ width: 375, height: 800 });
  await ui.expectNoSidewaysScroll(page, 'API keys page at 375 px');
  await ui.expectAccessible(page, 'API keys page at 375 px');
  await ui.screenshot(page, '33-api-keys-phone.png');
  await ui.mainNav(page).getByRole('link', { name: 'Users' }).click();
  await page.locator(`tr[data-user-id="${created.user_id}"]`).waitFor();
  await ui.expectNoSidewaysScroll(page, 'users page at 375 px');
  await ui.expectAccessible(page, 'users page at 375 px');
  await ui.screenshot(page, '34-users-phone.png');

  // The list pages: 26 users are two pages of 25, the second with the newest one.
  await page.setViewportSize({ width: 1366, height: 900 });
  for (let i = 0; i < 24; i += 6) {
    await Promise.all(
      Array.from({ length: 6 }, (_, j) =>
        dam
          .POST('/api/v1/users', { body: { email: `bulk${i + j}@example.com`, password: 'bulk-password', role_id: 4 } })
          .then((r) => expect(r.response.status).toBe(201)),
      ),
    );
  }
  await page.reload();
  await page.getByText('26 users in your group').waitFor();
  const pager = page.getByRole('navigation', { name: 'Pages of users' });
  await pager.getByText('Page 1 of 2').waitFor();
  const ids = () => page.locator('tr[data-user-id]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-user-id')));
  const first = await ids();
  expect(first).toHaveLength(25);
  await pager.getByRole('button', { name: 'Next page' }).click();
  await pager.getByText('Page 2 of 2').waitFor();
  // The last page disables Next page: the keyboard's focus goes to Previous page, not to the top of the page.
  expect(await ui.settled(page, 'document.activeElement && document.activeElement.textContent', 'Previous page')).toBe('Previous page');
  const second = await waitFor(async () => ((await ids()).length === 1 ? ids() : undefined), { description: 'the second page of users' });
  expect(first).not.toContain(second[0]);

  // Delete (after a confirmation that says what happens): the user leaves the list, their session and login answer 401.
  const doomedId = Number(second[0]);
  const doomed = (await dam.GET('/api/v1/users/{user_id}', { params: { path: { user_id: doomedId } } })).data?.email as string;
  const doomedSession = (await loginResult(e2e.suite.base, doomed, 'bulk-password')).jwt;
  const doomedRow = page.locator(`tr[data-user-id="${doomedId}"]`);
  await doomedRow.getByRole('button', { name: `Delete ${doomed}` }).click();
  await doomedRow
    .getByRole('alert')
    .filter({ hasText: 'the API keys they created are revoked' })
    .filter({ hasText: 'Their assets stay in the group' })
    .waitFor();
  expect(await ui.settled(page, 'document.activeElement.textContent', 'Cancel')).toBe('Cancel');
  await ui.expectAccessible(page, 'users page asking to confirm a deletion');
  await ui.screenshot(page, '36-user-delete-confirm.png');
  await doomedRow.getByRole('button', { name: 'Yes, delete' }).click();
  await page
    .getByRole('status')
    .filter({ hasText: `${doomed} deleted` })
    .waitFor();
  await doomedRow.waitFor({ state: 'detached' });
  await page.getByText('25 users in your group').waitFor();
  expect(await page.getByRole('navigation', { name: 'Pages of users' }).count()).toBe(0);
  expect(await ids()).not.toContain(String(doomedId));
  expect(await loginStatus(doomed, 'bulk-password')).toBe(401);
  expect((await fetch(`${e2e.suite.base}/api/v1/users/me`, { headers: { authorization: `Bearer ${doomedSession}` } })).status).toBe(401);
  expect((await dam.GET('/api/v1/users/{user_id}', { params: { path: { user_id: doomedId } } })).response.status).toBe(404);
  // One's own row offers no deletion (the API would answer CANNOT_MODIFY_SELF).
  expect(await mine.getByRole('button', { name: `Delete ${ADMIN.email}` }).isDisabled()).toBe(true);
  await mine.getByText('You cannot disable or delete yourself.').waitFor();
  expect(await problems()).toEqual([]);

  // A MANAGER: no Users, no Trash; the address of Users says so; API keys holds only their own keys.
  const manager = await open();
  try {
    await ui.signIn(manager.page, e2e.suite.base, { email: MARIA.email, password: newPassword });
    const links = await ui.mainNav(manager.page).getByRole('link').allInnerTexts();
    expect(links).toEqual(expect.arrayContaining(['Assets', 'Upload', 'Jobs', 'API keys']));
    expect(links).not.toContain('Users');
    expect(links).not.toContain('Trash');
    await manager.page.goto(`${e2e.suite.base}/console/users`);
    await manager.page.getByRole('heading', { name: 'Not permitted', level: 1 }).waitFor();
    await manager.page.getByRole('alert').filter({ hasText: 'needs the MANAGE_USERS permission' }).waitFor();
    await ui.expectAccessible(manager.page, 'not-permitted page');
    await ui.screenshot(manager.page, '35-not-permitted.png');
    await ui.mainNav(manager.page).getByRole('link', { name: 'API keys' }).click();
    await manager.page.getByRole('heading', { name: 'Your accessID' }).waitFor();
    expect(await manager.page.getByRole('form', { name: 'Create an API key' }).count()).toBe(0);
    await ui.expectAccessible(manager.page, 'API keys page of a MANAGER');
    expect(await manager.problems()).toEqual([]);
  } finally {
    await manager.close();
  }
}, 120_000);
