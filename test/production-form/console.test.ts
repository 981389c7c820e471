/**
 * The web console in a real browser (Debian's Chromium) through the production form's front door (issue 31): an
 * https page on the API host uploads through the picker over tus to the upload host, and every tus request goes to
 * an https URL (the Location the upload service built behind nginx), so the browser neither blocks it as mixed
 * content nor leaves the page. The public hosts reach nginx through a CONNECT proxy of this test (as DNS would);
 * the browser trusts the run's CA as a user's browser trusts a company CA: in the NSS database of its HOME (certutil,
 * Debian's libnss3-tools), a temporary one. Certificate errors are not ignored: an untrusted chain fails the page load.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { scaled, waitFor } from '@dam/testing';
import { dropFiles, launchChromium, watchTus, type Browser } from '../../web/console/test/browser';
import { formState } from './front-door';

const state = formState();
const BASE = `https://${state.publicHosts[0]}`;
const UPLOAD = `https://${state.publicHosts.find((h) => h.startsWith('upload.'))}`;

let proxy: http.Server;
let proxyUrl: string;
let browser: Browser;
let home: string;

/** A HOME whose NSS database (Chromium's trust store on Linux) trusts `caFile` for TLS servers (`C`), or nothing. */
function homeTrusting(caFile?: string): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'dam-pf-chromium-'));
  const db = `sql:${path.join(dir, '.pki', 'nssdb')}`;
  mkdirSync(path.join(dir, '.pki', 'nssdb'), { recursive: true });
  execFileSync('certutil', ['-N', '-d', db, '--empty-password']);
  if (caFile) execFileSync('certutil', ['-A', '-d', db, '-t', 'C,,', '-n', 'dam-pf', '-i', caFile]);
  return dir;
}

beforeAll(async () => {
  // CONNECT <public host>:443 → the ingress (127.0.0.1:443); nothing else.
  proxy = http.createServer((_req, res) => res.writeHead(405).end());
  proxy.on('connect', (req: http.IncomingMessage, client: net.Socket, head: Buffer) => {
    const [host, port] = String(req.url).split(':');
    if (!host || !state.publicHosts.includes(host) || Number(port) !== state.httpsPort) {
      client.end('HTTP/1.1 403 Forbidden\r\n\r\n');
      return;
    }
    const upstream = net.connect(state.httpsPort, '127.0.0.1', () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
  proxyUrl = `http://127.0.0.1:${(proxy.address() as net.AddressInfo).port}`;
  home = homeTrusting(state.caFile);
  browser = await launchChromium({ home });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await new Promise((r) => proxy?.close(r));
  if (home) rmSync(home, { recursive: true, force: true });
});

it("refuses the front door's certificate without the run's CA in its NSS database (the trust is the test's, not luck)", async () => {
  const bare = homeTrusting();
  const untrusting = await launchChromium({ home: bare });
  try {
    const page = await (await untrusting.newContext({ proxy: { server: proxyUrl } })).newPage();
    await expect(page.goto(`${BASE}/console/`)).rejects.toThrow(/ERR_CERT_AUTHORITY_INVALID/);
  } finally {
    await untrusting.close();
    rmSync(bare, { recursive: true, force: true });
  }
});

it('signs in on https and uploads through the picker over tus, every request to an https URL on the upload host', async () => {
  const context = await browser.newContext({ proxy: { server: proxyUrl }, viewport: { width: 1366, height: 900 } });
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('pageerror', (err) => problems.push(`uncaught: ${err.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console: ${m.text()}`);
  });
  try {
    await page.goto(`${BASE}/console/`);
    await page.getByLabel('Email').fill(state.adminEmail);
    await page.getByLabel('Password').fill(state.adminPassword);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Assets', level: 1 }).waitFor();
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Upload' }).click();
    await page.locator('.uppy-Dashboard-inner').waitFor();
    const tus = await watchTus(page, UPLOAD);
    const bytes = await sharp({ create: { width: 320, height: 200, channels: 3, background: '#a52' } })
      .png()
      .toBuffer();
    await dropFiles(page, [{ name: 'console-form.png', type: 'image/png', bytes }]);
    await page.getByRole('button', { name: /^Upload 1 file$/ }).click();
    await waitFor(async () => (await page.locator('[data-uploaded-asset]').count()) === 1, {
      timeoutMs: scaled(90_000),
      intervalMs: 250,
      description: 'the upload finished in the picker',
    });
    expect(tus.filter((c) => c.method === 'POST')).toHaveLength(1);
    expect(tus.filter((c) => c.method === 'PATCH').length).toBeGreaterThan(0);
    for (const c of tus) expect(c.url.startsWith(`${UPLOAD}/api/v1/uploads/tus`)).toBe(true);
    expect(problems).toEqual([]);
  } finally {
    await context.close();
  }
});
