import { makePng, scaled, waitFor, type FaultProxy } from '@dam/testing';
import { useSuite } from '../e2e/suite';

// Issue 14: a slow or hung dependency. The services reach PostgreSQL and S3 through fault proxies that slow every
// chunk down or hold all traffic (a hung server, a partition: connections stay open, nothing is answered). Slow
// must still work; hung must end every request in a bounded time with the contract's 503 (the pool waits 5 s for a
// connection, a query 30 s, S3 S3_TIMEOUT_MS), never pile connections up without bound, and heal by itself.
const S3_TIMEOUT_MS = 4000;
const S3_USERS = ['addon', 'conversion', 'gateway', 'link-signing', 'metadata', 'transcode', 'upload'];
const e2e = useSuite(Object.fromEntries(S3_USERS.map((name) => [name, { S3_TIMEOUT_MS: String(S3_TIMEOUT_MS) }])), { proxies: { postgres: true, s3: true } });

interface Answer {
  status: number;
  ms: number;
  code?: string;
}

async function timed(url: string, init: RequestInit = {}): Promise<Answer> {
  const started = Date.now();
  try {
    const res = await fetch(url, { ...init, signal: AbortSignal.timeout(scaled(60_000)) });
    const text = await res.text();
    let code: string | undefined;
    try {
      code = (JSON.parse(text) as { error?: { code?: string } }).error?.code;
    } catch {
      // Not JSON: a success body.
    }
    return { status: res.status, ms: Date.now() - started, ...(code ? { code } : {}) };
  } catch (error) {
    return { status: 0, ms: Date.now() - started, code: String(error) };
  }
}

const auth = () => ({ authorization: `Bearer ${e2e.jwt}` });
const proxy = (name: 'postgres' | 's3'): FaultProxy => {
  const p = e2e.suite.proxies[name];
  if (!p) throw new Error(`no ${name} proxy`);
  return p;
};
const upload = (n: number): RequestInit => {
  const form = new FormData();
  form.append('file', new Blob([makePng(40 + n, 30 + n)]), `slow-${n}.png`);
  return { method: 'POST', headers: auth(), body: form };
};

let asset = '';

beforeAll(async () => {
  asset = await e2e.api.upload(makePng(64, 48), 'slow-base.png');
  expect((await e2e.api.settled(asset)).status).toBe('OK');
});

afterEach(async () => {
  await proxy('postgres').pass();
  await proxy('s3').pass();
});

it('keeps working, only slower, when every chunk to PostgreSQL and S3 is held 150 ms', async () => {
  proxy('postgres').delay(150);
  proxy('s3').delay(150);
  const answers = await Promise.all([
    timed(`${e2e.suite.base}/api/v1/assets/${asset}/data`, { headers: auth() }),
    timed(`${e2e.suite.base}/api/v1/assets/${asset}/content/original/download`, { headers: auth() }),
    timed(`${e2e.suite.upload}/api/v1/assets/new/content/original/upload`, upload(1)),
  ]);
  expect(answers.map((a) => a.status)).toEqual([200, 200, 200]);
});

it('answers 503 within the pool and query bounds while PostgreSQL hangs, holds no more connections than its pools, and heals', async () => {
  const pg = proxy('postgres');
  pg.blackhole();
  pg.resetPeak();
  // Requests arriving all through the hang: reads and writes of metadata, auth, search.
  const sent: Array<Promise<Answer>> = [];
  for (let round = 0; round < 4; round++) {
    sent.push(
      timed(`${e2e.suite.base}/api/v1/assets/${asset}/data`, { headers: auth() }),
      timed(`${e2e.suite.base}/api/v1/users/me`, { headers: auth() }),
      timed(`${e2e.suite.base}/api/v1/assets/search`, {
        method: 'POST',
        headers: { ...auth(), 'content-type': 'application/json' },
        body: JSON.stringify({ filters: { name: 'slow*' } }),
      }),
      timed(`${e2e.suite.base}/api/v1/assets/${asset}/data/update`, {
        method: 'POST',
        headers: { ...auth(), 'content-type': 'application/json' },
        body: JSON.stringify({ data: { round }, mode: 'APPEND' }),
      }),
    );
    await new Promise((r) => setTimeout(r, 1000));
  }
  const answers = await Promise.all(sent);
  const connections = pg.connections();
  await pg.pass();

  // A hung server answers nothing: every request ends in 503 (or, if it got in before the hang, 200), none waits
  // longer than the query bound and a margin.
  expect(answers.filter((a) => a.status !== 503 && a.status !== 200)).toEqual([]);
  expect(answers.filter((a) => a.status === 503).length).toBeGreaterThan(0);
  expect(Math.max(...answers.map((a) => a.ms))).toBeLessThan(40_000);
  // Five services hold a pool of 10 each (metadata also its outbox relay's listener): nothing beyond that piled up.
  expect(connections.peak).toBeLessThanOrEqual(5 * 10 + 5);

  await waitFor(async () => (await timed(`${e2e.suite.base}/api/v1/assets/${asset}/data`, { headers: auth() })).status === 200, {
    timeoutMs: 15_000,
    intervalMs: 250,
  });
  const after = await timed(`${e2e.suite.upload}/api/v1/assets/new/content/original/upload`, upload(2));
  expect(after.status).toBe(200);
});

it('answers 503 within S3_TIMEOUT_MS while S3 hangs, and heals', async () => {
  const s3 = proxy('s3');
  s3.blackhole();
  const answers = await Promise.all([
    timed(`${e2e.suite.base}/api/v1/assets/${asset}/content/original/download`, { headers: auth() }),
    timed(`${e2e.suite.upload}/api/v1/assets/new/content/original/upload`, upload(3)),
  ]);
  await s3.pass();
  expect(answers).toMatchObject([
    { status: 503, code: 'UNAVAILABLE' },
    { status: 503, code: 'UNAVAILABLE' },
  ]);
  // The timeout (up to two S3 calls in a row: wall-clock), plus what the request does before and after its S3 calls
  // (this machine's work, stretched; the sum stays well under the 30 s default timeout it must not wait for).
  expect(answers.filter((a) => a.ms >= S3_TIMEOUT_MS * 2 + scaled(3000))).toEqual([]);

  await waitFor(async () => (await timed(`${e2e.suite.base}/api/v1/assets/${asset}/content/original/download`, { headers: auth() })).status === 200, {
    timeoutMs: 15_000,
    intervalMs: 250,
  });
});
