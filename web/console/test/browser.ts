import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { chromium, type Browser, type Page, type Request } from 'playwright-core';

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
      const [chooser] = await Promise.all([page.waitForEvent('filechooser', { timeout: 5_000 }), page.keyboard.press('Enter')]);
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
  await page
    .waitForFunction(`(() => { try { return (${expression}) === ${JSON.stringify(expected)}; } catch { return false; } })()`, undefined, { timeout: timeoutMs })
    .catch(() => undefined);
  return page.evaluate(expression);
}
