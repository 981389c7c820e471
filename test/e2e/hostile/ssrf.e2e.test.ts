/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are untyped JSON; the assertions check them */
import http, { type Server } from 'node:http';
import { freePort, listen, scaled, waitFor } from '@dam/testing';
import { useSuite } from '../suite';

/**
 * Issue 14, SSRF: the requests the service makes on a user's behalf (Ingest from URI in `upload`; webhook deliveries
 * in `webhook`, whose URLs `auth` checks when the group's settings name them) never reach an internal address
 * (CONTRACT §4, §10, §11). A CANARY HTTP server listens on one port P at 127.0.0.2, 127.0.0.1 and [::1]; every
 * spelling of an internal address below is sent to ingest and as a webhook URL, directly and behind redirects from a
 * host the suite allow-lists (127.0.0.1), and the canary must see no connection at all. Every refusal comes back
 * well before a connect timeout (so nothing tried to connect to a blackholed private address) and never as a 5xx.
 *
 * What the code promises (read from it, and asserted exactly):
 * - Ingest refuses what its URL alone shows (scheme, credentials, a literal blocked address, a blocked name, plain
 *   http to a host that is not allow-listed) synchronously: 200 `{id, status: "ERROR", message: "refused: …"}`, and
 *   the asset is ERROR with that message in `errors.original` (CONTRACT §4). A redirect is checked again at every
 *   hop by the download job: 202 QUEUED, then ERROR with `errors.original` "refused: …".
 * - Settings refuse such a webhook URL with 400 `{error: {code: "VALIDATION_FAILED", message, details: [{path:
 *   "webhooks.urls.0", message}]}}` (CONTRACT §1). A delivery never follows a redirect: an allow-listed URL that
 *   answers 301/302/307/308 is a failed attempt ("the receiver answered 30x"), retried until the delivery is failed.
 *
 * 127.0.0.1 is allow-listed for ingest and webhooks in the suite, so a URL that really names 127.0.0.1 (also
 * `2130706433`, `127.1`, ...) may reach the canary's 127.0.0.1 listener by design; those are not sent. The canary
 * listens there anyway for what resolves or connects to it without naming it: `localhost`, `0.0.0.0`, `[::]`.
 *
 * Names whose DNS answer changes between the check and the connect (rebinding) cannot be staged here (no DNS
 * server): libs/http/test/outbound-fetch.int.test.ts covers them with an injected resolver.
 */

/** Where the canary's port goes in the tables (it is only known once the canary listens). */
const PORT = '{P}';

/**
 * Hosts (with the canary port, or the service's default port) that are internal in every spelling; each is sent
 * as http and as https: plain http is refused for any host that is not allow-listed before its address is looked
 * at, so only the https forms prove the address check itself.
 */
const INTERNAL_HOSTS = [
  // 127.0.0.2 (loopback; the canary listens there)
  `127.0.0.2:${PORT}`,
  `2130706434:${PORT}`, // decimal
  `0177.0.0.2:${PORT}`, // octal
  `017700000002:${PORT}`, // octal, one number
  `0x7f.0.0.2:${PORT}`, // hex
  `0x7f000002:${PORT}`, // hex, one number
  `127.2:${PORT}`, // short form
  `[::ffff:127.0.0.2]:${PORT}`, // IPv4-mapped
  `[::ffff:7f00:2]:${PORT}`, // IPv4-mapped, hex
  // IPv4-compatible (deprecated ::/96), which the URL parser turns into [::7f00:2] (this suite found the guard
  // looking for the dotted form only: it let the https forms through).
  `[::127.0.0.2]:${PORT}`,
  // loopback by name, the unspecified addresses (a connect to them reaches this machine), IPv6 loopback
  `localhost:${PORT}`,
  `LOCALHOST:${PORT}`,
  `localhost.:${PORT}`,
  `0.0.0.0:${PORT}`,
  `[::]:${PORT}`,
  `[::1]:${PORT}`,
  // cloud metadata, private, CGNAT, unique-local and link-local IPv6 (nothing listens: a try would hang or fail)
  '169.254.169.254/latest/meta-data/',
  'metadata.google.internal/computeMetadata/v1/',
  '10.0.0.1/',
  '[::10.0.0.1]/', // IPv4-compatible, [::a00:1] once parsed
  '192.168.0.1/',
  '172.16.0.1/',
  '100.64.0.1/',
  '[fc00::1]/',
  '[fe80::1]/',
].map((h) => (h.includes('/') ? h : `${h}/`));

/** Every URL sent straight to ingest and to the webhook settings. */
const DIRECT = [
  ...INTERNAL_HOSTS.flatMap((h) => [`http://${h}`, `https://${h}`]),
  // other schemes
  'file:///etc/passwd',
  `gopher://127.0.0.2:${PORT}/`,
  `ftp://127.0.0.2:${PORT}/`,
  `dict://127.0.0.2:${PORT}/`,
  // userinfo tricks (the host is what follows the last @)
  `http://127.0.0.1:${PORT}@127.0.0.2:${PORT}/`,
  `http://user:pass@127.0.0.2:${PORT}/`,
  `https://user:pass@127.0.0.2:${PORT}/`,
];

/** Where the allow-listed redirector sends its callers (its paths answer 301, 302, 307 and 308 to each). */
const REDIRECT_TARGETS = [
  ...INTERNAL_HOSTS.filter((h) => h.includes(PORT) || /^(169\.254|10\.0\.0\.1\/)/.test(h)).flatMap((h) => [`http://${h}`, `https://${h}`]),
  `//127.0.0.2:${PORT}/`, // scheme-relative
  `https://user:pass@127.0.0.2:${PORT}/`,
  'file:///etc/passwd',
  `gopher://127.0.0.2:${PORT}/`,
];
const REDIRECTS = [301, 302, 307, 308] as const;

/**
 * Well under every connect timeout in play (ingest: INGEST_CONNECT_TIMEOUT_MS below; webhooks: 15 s), for one
 * request answered at once (a refusal, a settings check, a webhook attempt): a bound on the product's answer.
 */
const FAST_MS = 5_000;
/**
 * For a queued ingest followed to its end (the job handed out, its download refused, the asset's state written and
 * polled): work of several services, so stretched for a slower machine. INGEST_CONNECT_TIMEOUT_MS is stretched
 * with it, so a connect that was tried still takes four times longer.
 */
const PIPELINE_MS = scaled(5_000);

let canaryPort = 0;
/** What reached the canary: every TCP connection and every request, with the listener's address. */
const canaryHits: string[] = [];
const canaryServers: Server[] = [];
/** The canary's listeners, as URLs (the [::1] one only when it could be bound). */
const canaryBases: string[] = [];
let redirector: Server;
let redirectorUrl: string;
const redirectorHits: string[] = [];

const fill = (template: string) => template.replaceAll(PORT, String(canaryPort));

/** The test running when something reached the canary, for the list the last test fails with. */
const during = () => `during "${expect.getState().currentTestName ?? 'a hook'}"`;

/**
 * The canary's listener on `host`:`port`; rejects when the address cannot be bound. Connections are counted, not
 * only requests: an https request to it never becomes an HTTP request (its TLS handshake fails), yet it got there.
 */
function canaryListener(host: string, port: number): Promise<Server> {
  const server = http.createServer((req, res) => {
    canaryHits.push(`request ${req.method} ${req.url} at ${req.socket.localAddress}:${req.socket.localPort} (host header ${req.headers.host}) ${during()}`);
    req.resume();
    res.writeHead(200, { 'content-type': 'text/plain', connection: 'close' }).end('canary');
  });
  server.on('connection', (socket) =>
    canaryHits.push(`connection to ${socket.localAddress}:${socket.localPort} from ${socket.remoteAddress}:${socket.remotePort} ${during()}`),
  );
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve(server);
    });
  });
}

const closeServer = (server: Server) =>
  new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });

/** The canary on one port at 127.0.0.2, 127.0.0.1 and (where this machine has IPv6) [::1]. */
async function startCanary(): Promise<void> {
  for (let attempt = 1; ; attempt += 1) {
    const port = await freePort();
    const bound: Server[] = [];
    try {
      for (const host of ['127.0.0.2', '127.0.0.1']) bound.push(await canaryListener(host, port));
    } catch (error) {
      await Promise.all(bound.map(closeServer));
      if (attempt < 5) continue;
      throw error;
    }
    canaryPort = port;
    canaryServers.push(...bound);
    canaryBases.push(`http://127.0.0.2:${port}`, `http://127.0.0.1:${port}`);
    try {
      canaryServers.push(await canaryListener('::1', port));
      canaryBases.push(`http://[::1]:${port}`);
    } catch {
      // No IPv6 loopback on this machine (or the port is taken there): [::1] and [::] then reach nothing, which
      // the guard must refuse anyway; the sanity test below lists the listeners that do exist.
    }
    return;
  }
}

beforeAll(async () => {
  await startCanary();
  // An "external website" the operator allowed (127.0.0.1 is on INGEST_ALLOW_HOSTS and WEBHOOK_ALLOW_HOSTS):
  // /r/<status>/<i> answers <status> with Location REDIRECT_TARGETS[i]. Its own hits are fine; a follow is not.
  redirector = http.createServer((req, res) => {
    redirectorHits.push(`${req.method} ${req.url}`);
    req.resume();
    const m = /^\/r\/(\d{3})\/(\d+)$/.exec(req.url ?? '');
    const target = m ? REDIRECT_TARGETS[Number(m[2])] : undefined;
    if (!m || target === undefined) {
      res.writeHead(404).end('no such path');
      return;
    }
    res.writeHead(Number(m[1]), { location: fill(target), 'content-length': 0 }).end();
  });
  redirectorUrl = await listen(redirector);
});

// Started after the hook above. No limits on request or download rates: every case must be refused by the
// outbound guard, never by a rate limit. A connect that was tried would take INGEST_CONNECT_TIMEOUT_MS.
const e2e = useSuite({
  gateway: { RATE_LIMIT_PER_MINUTE: '0', RATE_LIMIT_ADDRESS_PER_MINUTE: '0' },
  upload: {
    INGEST_ALLOW_HOSTS: '127.0.0.1',
    INGEST_RATE_PER_MINUTE: '0',
    INGEST_CONNECT_TIMEOUT_MS: String(4 * PIPELINE_MS),
    RATE_LIMIT_PER_MINUTE: '0',
    RATE_LIMIT_ADDRESS_PER_MINUTE: '0',
  },
});
const { call, upload } = e2e.api;

afterAll(async () => {
  await Promise.all([...canaryServers, ...(redirector ? [redirector] : [])].map(closeServer));
});

async function ingest(key: string): Promise<{ status: number; body: any; ms: number }> {
  const started = Date.now();
  const res = await fetch(`${e2e.suite.upload}/api/v1/assets/new/content/original/external`, {
    method: 'POST',
    headers: { authorization: `Bearer ${e2e.jwt}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'ssrf.bin', key }),
    signal: AbortSignal.timeout(scaled(30_000)),
  });
  const text = await res.text();
  let body: any = text;
  try {
    body = JSON.parse(text);
  } catch {
    // kept as text: the assertions show it
  }
  return { status: res.status, body, ms: Date.now() - started };
}

const assetData = async (id: string) => (await call('GET', `/api/v1/assets/${id}/data`)).body;
const settled = (id: string) =>
  waitFor(
    async () => {
      const d = await assetData(id);
      return d?.status && d.status !== 'NOT_READY' ? d : undefined;
    },
    { timeoutMs: 30_000, intervalMs: 100, description: `asset ${id} settled` },
  );

describe('the canary (CONTRACT §11: the target every case below must not reach)', () => {
  it('answers on each of its listeners, so that its silence later means something', async () => {
    expect(canaryBases.slice(0, 2)).toEqual([`http://127.0.0.2:${canaryPort}`, `http://127.0.0.1:${canaryPort}`]);
    for (const base of canaryBases) {
      const res = await fetch(`${base}/sanity`);
      expect({ base, status: res.status, body: await res.text() }).toEqual({ base, status: 200, body: 'canary' });
    }
    const requests = canaryHits.filter((h) => h.startsWith('request'));
    expect(requests).toHaveLength(canaryBases.length);
    for (const local of ['127.0.0.2', '127.0.0.1', ...(canaryBases.length > 2 ? ['::1'] : [])]) {
      expect(requests.some((h) => h.includes(` at ${local}:${canaryPort} `))).toBe(true);
    }
    // The redirector answers as the tables expect.
    const hop = await fetch(`${redirectorUrl}/r/307/0`, { redirect: 'manual' });
    expect({ status: hop.status, location: hop.headers.get('location') }).toEqual({ status: 307, location: fill(REDIRECT_TARGETS[0]!) });
    canaryHits.length = 0;
    redirectorHits.length = 0;
  });
});

describe('Ingest from URI never reaches an internal address (CONTRACT §4, §11)', () => {
  it.each(DIRECT)('refuses %s at once: 200 {status: ERROR, message: "refused: …"}, the asset ERROR with it', async (template) => {
    const key = fill(template);
    const mark = canaryHits.length;
    const res = await ingest(key);
    // Should it have been queued, its download runs now, so that what it reaches is this case's.
    if (res.status === 202) await settled(res.body.id).catch(() => undefined);
    expect({ key, status: res.status, state: res.body?.status }).toEqual({ key, status: 200, state: 'ERROR' });
    expect(res.body).toMatchObject({ id: expect.stringMatching(/^[A-Za-z0-9]{32}$/), status: 'ERROR', message: expect.stringMatching(/^refused: /) });
    expect(res.ms).toBeLessThan(FAST_MS);
    expect(await assetData(res.body.id)).toMatchObject({ status: 'ERROR', errors: { original: res.body.message } });
    expect(canaryHits.slice(mark)).toEqual([]);
  });

  it.each(REDIRECT_TARGETS.map((target, i) => [target, i] as const))(
    'follows no 301/302/307/308 from an allowed host to %s: 202 QUEUED, then ERROR "refused: …" without a connect',
    async (target, i) => {
      const mark = canaryHits.length;
      await Promise.all(
        REDIRECTS.map(async (status) => {
          const key = `${redirectorUrl}/r/${status}/${i}`;
          const started = Date.now();
          const res = await ingest(key);
          expect({ key, status: res.status, state: res.body?.status }).toEqual({ key, status: 202, state: 'QUEUED' });
          const asset = await settled(res.body.id);
          const ms = Date.now() - started;
          expect({ key, to: fill(target), status: asset.status, error: asset.errors?.original }).toEqual({
            key,
            to: fill(target),
            status: 'ERROR',
            error: expect.stringMatching(/^refused: /),
          });
          expect(ms).toBeLessThan(PIPELINE_MS);
          // The refusal is the redirect's: the allowed first hop was made.
          expect(redirectorHits).toContain(`GET /r/${status}/${i}`);
        }),
      );
      expect(canaryHits.slice(mark)).toEqual([]);
    },
  );
});

describe('webhook URLs never reach an internal address (CONTRACT §3, §10, §11)', () => {
  it.each(DIRECT)('the settings refuse %s: 400 VALIDATION_FAILED at webhooks.urls.0', async (template) => {
    const url = fill(template);
    const started = Date.now();
    const res = await call('PATCH', '/api/v1/settings', { webhooks: { urls: [url] } });
    const ms = Date.now() - started;
    // Should it have been taken, the group's settings go back to no URL before the assertions fail.
    if (res.status < 300) await call('PATCH', '/api/v1/settings', { webhooks: { urls: [] } });
    expect({ url, status: res.status }).toEqual({ url, status: 400 });
    expect(res.body).toEqual({
      error: { code: 'VALIDATION_FAILED', message: expect.any(String), details: [{ path: 'webhooks.urls.0', message: expect.any(String) }] },
    });
    expect(ms).toBeLessThan(FAST_MS);
  });

  // Settings take an allow-listed URL that redirects; a delivery must record the 30x as a failed attempt (never
  // follow it), retry on the suite's compressed schedule (8 attempts), and end failed. At most 10 URLs per group:
  // each status gets every 4th target.
  it.each(REDIRECTS.map((status, k) => [status, REDIRECT_TARGETS.map((_, i) => i).filter((i) => i % REDIRECTS.length === k)] as const))(
    'a delivery to the allow-listed redirector answering %i is recorded failed and never follows it (targets %j)',
    async (status, targets) => {
      const mark = canaryHits.length;
      const urls = targets.map((i) => `${redirectorUrl}/r/${status}/${i}`);
      const set = await call('PATCH', '/api/v1/settings', { webhooks: { urls } });
      expect(set.status).toBe(200);
      expect(set.body.webhooks.urls).toEqual(urls);
      const asset = await upload(Buffer.from(`ssrf webhook ${status}`), `ssrf-${status}.txt`);
      const deliveries = await waitFor(
        async () => {
          const log = await call('GET', '/api/v1/webhooks/deliveries?page_size=100');
          const mine = (log.body.items as any[]).filter((d) => d.asset_id === asset && d.event === 'file-saved');
          return mine.length === urls.length && mine.every((d) => d.status !== 'pending') ? mine : undefined;
        },
        { timeoutMs: 30_000, intervalMs: 200, description: `the file-saved deliveries of ${asset} finished` },
      );
      for (const url of urls) {
        const d = deliveries.find((x) => x.url === url);
        expect(d).toMatchObject({ url, status: 'failed', attempt_count: 8, response_code: status, error: `the receiver answered ${status}` });
        expect(d.attempts).toHaveLength(8);
        for (const a of d.attempts) {
          expect(a).toMatchObject({ response_code: status, error: `the receiver answered ${status}` });
          expect(a.duration_ms).toBeLessThan(FAST_MS);
        }
        // Every attempt reached the redirector (the delivery happened), and nothing went further.
        expect(redirectorHits.filter((h) => h === `POST ${new URL(url).pathname}`).length).toBeGreaterThanOrEqual(8);
      }
      expect(canaryHits.slice(mark)).toEqual([]);
    },
  );
});

describe('the end', () => {
  it('left the canary without a single connection or request', async () => {
    // Deliveries still pending (the last upload's later events) finish first; then nothing is in flight.
    await waitFor(async () => (await call('GET', '/api/v1/webhooks/deliveries?status=pending')).body.total === 0, {
      timeoutMs: 30_000,
      description: 'no webhook delivery pending',
    });
    await call('PATCH', '/api/v1/settings', { webhooks: { urls: [] } });
    await new Promise((r) => setTimeout(r, 300));
    expect(canaryHits).toEqual([]);
  });
});
