import { existsSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type Locator, type Page, type Request } from 'playwright-core';

// The browser tests live in test/e2e, which does not depend on playwright-core itself: its types come from here.
export type { Browser, BrowserContext, Page, Request } from 'playwright-core';

/**
 * What the console's browser tests need (test/e2e/console.e2e.test.ts): Debian's Chromium driven by
 * playwright-core (no browser download: `executablePath`), axe-core for accessibility, an up-to-date build of the
 * console in web/console/dist, and the gestures and network watch the picker's test makes (drop, Tab, tus).
 */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const CONSOLE_DIR = path.resolve(__dirname, '..');

/**
 * Headless Chromium as this machine runs it: no sandbox (root), no GPU, and nothing that calls home (this
 * network refuses it). playwright-core gives every launch a fresh, empty user-data-dir of its own.
 */
export interface LaunchOptions {
  /**
   * HOME for Chromium: on Linux it trusts the CAs of the NSS database `$HOME/.pki/nssdb` (certutil). Unset: the
   * process's own HOME.
   */
  home?: string;
}

export async function launchChromium(options: LaunchOptions = {}): Promise<Browser> {
  if (!existsSync(CHROMIUM_PATH)) throw new Error(`no Chromium at ${CHROMIUM_PATH}: run deploy/infra/install-deps.sh (Debian package chromium)`);
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    headless: true,
    ...(options.home ? { env: { ...process.env, HOME: options.home } } : {}),
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(p) : statSync(p).mtimeMs);
  }
  return newest;
}

/** Builds the console when dist/ is missing or older than a source file (test/run-all.sh builds it first). */
export function ensureConsoleBuilt(): void {
  const built = path.join(CONSOLE_DIR, 'dist', 'index.html');
  const picker = path.join(CONSOLE_DIR, 'dist', 'picker.js');
  const sources = Math.max(
    newestMtime(path.join(CONSOLE_DIR, 'src')),
    ...['index.html', 'vite.config.mts', 'vite.picker.config.mts', 'vite-no-string-eval.mts', 'package.json'].map(
      (f) => statSync(path.join(CONSOLE_DIR, f)).mtimeMs,
    ),
  );
  if (existsSync(built) && existsSync(picker) && Math.min(statSync(built).mtimeMs, statSync(picker).mtimeMs) >= sources) return;
  execFileSync('pnpm', ['run', 'build'], { cwd: CONSOLE_DIR, stdio: 'inherit', timeout: 180_000 });
}

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: string[];
}

let axeSource: string | undefined;

/**
 * axe-core's WCAG 2.1 A/AA and best-practice rules on the page as it is now. axe is evaluated through the
 * DevTools protocol, which the page's CSP does not govern (an injected <script> would be refused, rightly).
 */
export async function axeViolations(page: Page): Promise<AxeViolation[]> {
  axeSource ??= readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
  await page.evaluate(axeSource);
  const run = `(async () => {
    const r = await axe.run(document, { resultTypes: ['violations'], runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] } });
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 5).map((n) => n.target.join(' ')) }));
  })()`;
  return (await page.evaluate(run)) as AxeViolation[];
}

/** The violations a test fails on: serious and critical. */
export const blocking = (v: AxeViolation[]): AxeViolation[] => v.filter((x) => x.impact === 'serious' || x.impact === 'critical');

/** True once every finite animation of the page has ended; a spinner's never does, so it does not count. */
const ANIMATIONS_ENDED = "document.getAnimations().every((a) => a.playState !== 'running' || a.effect?.getTiming().iterations === Infinity)";

/**
 * Fails with the serious and critical axe violations of the page as it is now, named by `what`.
 *
 * axe reads colours as drawn: mid-transition (Uppy fades its panels in) a button has part of its contrast, so finite
 * animations end first. Polled from here, one evaluate at a time (the string is evaluated within that DevTools call,
 * which the page's CSP does not govern), not with page.waitForFunction: given a string, that evaluates it again inside
 * the page on each poll after the first, with eval, which the console's CSP refuses (an EvalError the page reports,
 * on a machine slow enough for the animations to outlast the first check). A state passed through (Uppy's back
 * button while a panel closes) can be caught once: what stays a second later is what a user sees.
 */
export async function expectAccessible(page: Page, what: string): Promise<void> {
  for (const until = Date.now() + 5000; Date.now() < until; await page.waitForTimeout(100)) {
    if ((await page.evaluate(ANIMATIONS_ENDED)) === true) break;
  }
  let violations = blocking(await axeViolations(page));
  if (violations.length) {
    await page.waitForTimeout(1000);
    violations = blocking(await axeViolations(page));
  }
  if (violations.length) throw new Error(`${what}: serious/critical accessibility violations:\n${JSON.stringify(violations, null, 2)}`);
}

/**
 * Nothing wider than the viewport: the page reads at a phone's width without sideways scrolling. The failure names
 * the innermost elements past the edge. `everyElement`: also fails when an element sticks out of the viewport
 * although nothing scrolls (clipped by an overflow), for pages that must show all of themselves.
 */
export async function expectNoSidewaysScroll(page: Page, what: string, options: { everyElement?: boolean } = {}): Promise<void> {
  const [scroll, client, viewport] = (await page.evaluate(
    '[document.documentElement.scrollWidth, document.documentElement.clientWidth, window.innerWidth]',
  )) as [number, number, number];
  // A pixel of rounding allowed.
  const wide = (await page.evaluate(
    `[...document.querySelectorAll('body *')].filter((e) => e.getBoundingClientRect().right > ${viewport + 1} && ![...e.children].some((c) => c.getBoundingClientRect().right > ${viewport + 1})).slice(0, 8).map((e) => e.tagName + '.' + e.className + ' in ' + e.parentElement.tagName + '.' + e.parentElement.className)`,
  )) as string[];
  if (scroll > client || (options.everyElement && wide.length > 0)) {
    throw new Error(`${what}: ${scroll} px wide in a ${client} px viewport; past the edge: ${JSON.stringify(wide)}`);
  }
}

/** Where the console's browser tests keep their screenshots (a CI artifact): test-artifacts/console/. */
export const ARTIFACTS = path.resolve(CONSOLE_DIR, '../../test-artifacts/console');

/** A full-page screenshot into ARTIFACTS, e.g. `30-users.png`. */
export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: path.join(ARTIFACTS, name), fullPage: true });
}

/** The console's main navigation (its top links). */
export const mainNav = (page: Page): Locator => page.getByRole('navigation', { name: 'Main' });

/** Signs in on `{base}/console/` and waits for the Assets page. */
export async function signIn(page: Page, base: string, who: { email: string; password: string }): Promise<void> {
  await page.goto(`${base}/console/`);
  await page.getByLabel('Email').fill(who.email);
  await page.getByLabel('Password').fill(who.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Assets', level: 1 }).waitFor();
}

export interface WatchedPage {
  page: Page;
  context: BrowserContext;
  /** The page's uncaught errors and the CSP violations it reported, as text. */
  problems(): Promise<string[]>;
  close(): Promise<void>;
}

export interface WatchOptions {
  width?: number;
  height?: number;
  /** The page's default timeout (pass it through `scaled()`); unset: playwright's own. */
  timeoutMs?: number;
  /** An origin that may read and write the clipboard (copy buttons). */
  clipboardOrigin?: string;
}

/**
 * A fresh browser context and page that records every uncaught error and CSP violation. The listener is added
 * through the DevTools protocol before any script of the page: the page's CSP does not apply to it.
 */
export async function watchedPage(browser: Browser, options: WatchOptions = {}): Promise<WatchedPage> {
  const context = await browser.newContext({ viewport: { width: options.width ?? 1366, height: options.height ?? 900 } });
  await context.addInitScript(`
    window.__cspViolations = [];
    document.addEventListener('securitypolicyviolation', (e) => window.__cspViolations.push(e.violatedDirective + ' ' + e.blockedURI));
  `);
  if (options.clipboardOrigin) await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: options.clipboardOrigin });
  const page = await context.newPage();
  if (options.timeoutMs !== undefined) page.setDefaultTimeout(options.timeoutMs);
  const errors: string[] = [];
  page.on('pageerror', (err) => errors.push(`uncaught: ${err.message}`));
  return {
    page,
    context,
    close: () => context.close(),
    async problems() {
      const csp = (await page.evaluate('window.__cspViolations || []')) as string[];
      return [...errors, ...csp.map((c) => `CSP violation: ${c}`)];
    },
  };
}

/** One file through Upload Asset (`{upload}`, not the picker), as the ADMIN's JWT: the new asset's id. */
export async function uploadOriginal(upload: string, jwt: string, bytes: Buffer, name: string): Promise<string> {
  const form = new FormData();
  form.append('file', new Blob([new Uint8Array(bytes)]), name);
  const res = await fetch(`${upload}/api/v1/assets/new/content/original/upload`, {
    method: 'POST',
    headers: { authorization: `Bearer ${jwt}` },
    body: form,
  });
  if (res.status !== 200) throw new Error(`upload answered ${res.status}: ${await res.text()}`);
  return ((await res.json()) as { files: { id: string }[] }).files[0]?.id as string;
}

/** Before a console test file: the console built, Chromium started. */
export async function startBrowser(): Promise<Browser> {
  ensureConsoleBuilt();
  return launchChromium();
}

/** Drops files on the picker as a person dragging them from the desktop would (dragenter, dragover, drop). */
export async function dropFiles(page: Page, files: { name: string; type: string; bytes: Buffer }[]): Promise<void> {
  const payload = files.map((f) => ({ name: f.name, type: f.type, b64: f.bytes.toString('base64') }));
  const zone = await page.locator('.uppy-Dashboard-inner').elementHandle();
  const transfer = await page.evaluateHandle(
    `((files) => {
      const dt = new DataTransfer();
      for (const f of files) dt.items.add(new File([Uint8Array.from(atob(f.b64), (c) => c.charCodeAt(0))], f.name, { type: f.type }));
      return dt;
    })(${JSON.stringify(payload)})`,
  );
  for (const type of ['dragenter', 'dragover', 'drop']) await zone?.dispatchEvent(type, { dataTransfer: transfer });
}

/** Presses Tab until `selector` has the focus (the picker is reachable without a mouse); fails after 60 presses. */
export async function tabTo(page: Page, selector: string): Promise<void> {
  for (let i = 0; i < 60; i += 1) {
    await page.keyboard.press('Tab');
    if ((await page.evaluate(`!!document.activeElement && document.activeElement.matches(${JSON.stringify(selector)})`)) === true) return;
  }
  throw new Error(`${selector} never got the keyboard focus`);
}

/**
 * Opens a file chooser from the keyboard only: Tab to `selector`, Enter. The picker may re-render while the focus
 * travels (a button replaced under it), so a press that opened nothing is tried again from where the focus is.
 */
export async function openChooserWithKeyboard(page: Page, selector: string, attempts = 3) {
  for (let attempt = 1; ; attempt += 1) {
    await tabTo(page, selector);
    try {
      // As long as scaled() would wait (a busy machine opens the chooser late: one run on a load of 20 missed 5 s).
      const timeout = 5_000 * Math.max(1, Number(process.env.TEST_TIME_SCALE) || 1);
      const [chooser] = await Promise.all([page.waitForEvent('filechooser', { timeout }), page.keyboard.press('Enter')]);
      return chooser;
    } catch (error) {
      if (attempt >= attempts) throw error;
    }
  }
}

export interface TusCall {
  method: string;
  url: string;
  offset: number | undefined;
  aborted: boolean;
  status?: number;
  responseOffset?: number | undefined;
  headers: Record<string, string>;
}

/**
 * Records every tus request the page sends to `{upload}` (method, offset, headers, and the answer's status and
 * Upload-Offset), and cuts the connection of the first PATCH past the first chunk, as a dropped network would.
 */
export async function watchTus(page: Page, upload: string): Promise<TusCall[]> {
  const calls: TusCall[] = [];
  const byRequest = new Map<Request, TusCall>();
  const tusUrl = (u: URL) => u.origin === new URL(upload).origin && u.pathname.startsWith('/api/v1/uploads/tus');
  let cut = false;
  await page.route(tusUrl, async (route) => {
    const req = route.request();
    const headers = await req.allHeaders();
    const offset = headers['upload-offset'] === undefined ? undefined : Number(headers['upload-offset']);
    const call: TusCall = { method: req.method(), url: req.url(), offset, aborted: false, headers };
    calls.push(call);
    byRequest.set(req, call);
    if (!cut && req.method() === 'PATCH' && offset !== undefined && offset > 0) {
      cut = true;
      call.aborted = true;
      await route.abort('connectionreset');
      return;
    }
    await route.continue();
  });
  page.on('requestfinished', (req) => {
    const call = byRequest.get(req);
    if (!call) return;
    void req.response().then((res) => {
      if (!res) return;
      call.status = res.status();
      const o = res.headers()['upload-offset'];
      call.responseOffset = o === undefined ? undefined : Number(o);
    });
  });
  return calls;
}

/**
 * What `expression` (evaluated in the page, e.g. `document.activeElement.textContent`) says once it says `expected`,
 * or after `timeoutMs` whatever it says then: a focus moved by an effect lands a moment after the element that moves
 * it appears, later on a busy machine.
 */
export async function settled(page: Page, expression: string, expected: unknown, timeoutMs = 10_000): Promise<unknown> {
  // Polled from here, one DevTools evaluate at a time (see expectAccessible): page.waitForFunction would evaluate the
  // string with the page's eval, which the console's CSP refuses.
  const probe = `(() => { try { return (${expression}); } catch { return undefined; } })()`;
  for (const until = Date.now() + timeoutMs; ; await page.waitForTimeout(100)) {
    const got = await page.evaluate(probe);
    if (got === expected || Date.now() >= until) return got;
  }
}
