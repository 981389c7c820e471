import { randomUUID } from 'node:crypto';
import sharp from 'sharp';
import { createPool } from '@dam/db';
import { makePng, scaled, waitFor, warningLines } from '@dam/testing';
import { watchAssetEvents } from '../e2e/events';
import { ADMIN, ALL_SERVICES, useSuite, type Suite, type SuiteOptions } from '../e2e/suite';

/** One dependency of a running suite that goes away and comes back (issue 14, "Faults"). */
export interface Outage {
  /** Its name in messages. */
  dependency: string;
  /** How the suite runs for it (its own server, or behind a fault proxy). */
  suiteOptions: SuiteOptions;
  /** Takes it away: the services' connections to it end and new ones are refused. */
  stop(suite: Suite): Promise<void>;
  /** Brings it back as it was (same address, same data). */
  start(suite: Suite): Promise<void>;
  /** The readiness check, per service, that must say it is gone (every service that uses it). */
  readiness: Record<string, string>;
  /**
   * The services serve without it, so /readyz stays 200 and says `degraded` (NATS: a pod stays in its Service while
   * the bus is away); otherwise it answers 503 `unavailable`.
   */
  degraded?: boolean;
  /** How long it stays away: 8 s by default (the soak runs a minute, past every ack wait and lease). */
  outageMs?: number;
  /**
   * Every request must succeed while it is away, none may answer 503: NATS (issue 35, "Work without the bus": the
   * records, the Idempotency-Key store and the upload journal are in PostgreSQL; what the requests cause is
   * delivered once NATS is back).
   */
  allAccepted?: boolean;
}

/**
 * The scenario, as the tests of one file: the dependency stops in the middle of a running suite, with a conversion
 * in flight and uploads just accepted, and comes back OUTAGE_MS later. While it is away every request answers
 * within PROMPT_MS, with a success or a 503 and the contract's error body (NATS: a success, `allAccepted`), and every
 * service that uses it says so in /readyz (503 `unavailable`; NATS: 200 `degraded`); once it is back the suite
 * recovers by itself within RECOVERY_MS (every /readyz 200 `ok` again) and loses nothing.
 */
export function describeOutage(outage: Outage): void {
  const OUTAGE_MS = outage.outageMs ?? 8000;
  /**
   * "A few seconds": how soon each request is answered while it is away. Under 8 s, so a request that waits for it to
   * come back exceeds it. A bound on the product in wall-clock time, not stretched by TEST_TIME_SCALE: the slowest
   * answers are the services' own waits (NATS: its 1.5 s grace) plus well under a second of work.
   */
  const PROMPT_MS = 6000;
  /** How soon a /readyz answers while it is away: its checks only, so this machine's speed (about 50 ms here). */
  const READYZ_MS = scaled(2000);
  const RECOVERY_MS = 10_000;
  /** A request still unanswered after this is abandoned (reported as no answer). */
  const ABANDON_MS = 20_000;
  const UPLOADS_BEFORE = 3;
  const dependents = Object.keys(outage.readiness).sort();

  // Every service: the outage's readiness table names the workers too.
  const e2e = useSuite({}, { services: ALL_SERVICES, ...outage.suiteOptions });

  interface Outcome {
    probe: string;
    status: number;
    ms: number;
    contentType: string;
    body: string;
    /** Set when no answer came (a network error, or abandoned after ABANDON_MS). */
    error?: string;
    /** When it was sent, in ms after NATS stopped. */
    at?: number;
    /** Its Retry-After header, if any. */
    retryAfter?: string;
    /** The file an upload probe sent. */
    fileName?: string;
  }

  /** One request, timed, its whole body read. Never throws. */
  async function timed(probe: string, url: string, init: RequestInit = {}): Promise<Outcome> {
    const started = Date.now();
    try {
      const res = await fetch(url, { ...init, signal: AbortSignal.timeout(scaled(ABANDON_MS)) });
      const body = await res.text();
      const retryAfter = res.headers.get('retry-after');
      return {
        probe,
        status: res.status,
        ms: Date.now() - started,
        contentType: res.headers.get('content-type') ?? '',
        body,
        ...(retryAfter ? { retryAfter } : {}),
      };
    } catch (error) {
      return { probe, status: 0, ms: Date.now() - started, contentType: '', body: '', error: String(error) };
    }
  }

  const auth = (): Record<string, string> => ({ authorization: `Bearer ${e2e.jwt}` });
  const post = (body: unknown, headers: Record<string, string> = auth()): RequestInit => ({
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const uploadUrl = () => `${e2e.suite.upload}/api/v1/assets/new/content/original/upload`;
  const formOf = (bytes: Buffer, name: string): FormData => {
    const form = new FormData();
    form.append('file', new Blob([bytes]), name);
    return form;
  };
  const uploadInit = (n: number): RequestInit => ({ method: 'POST', headers: auth(), body: formOf(makePng(32 + n, 24 + n), `nats-restart-${n}.png`) });
  const assetIdOf = (o: Outcome): string => (JSON.parse(o.body) as { files: Array<{ id: string }> }).files[0]?.id ?? '';

  /** What is wrong with an answer, if anything: it must come within PROMPT_MS, a success or a 503 with the contract's body. */
  function violation(o: Outcome): string | undefined {
    const what = `${o.probe}${o.at === undefined ? '' : ` sent ${o.at} ms into the outage`}: ${o.error ?? o.status} after ${o.ms} ms`;
    if (o.error) return `${what} (no answer)`;
    if (o.ms > PROMPT_MS) return `${what} (over ${PROMPT_MS} ms): ${o.body.slice(0, 200)}`;
    if (o.status >= 200 && o.status < 300) return undefined;
    if (outage.allAccepted) return `${what}: not accepted while ${outage.dependency} is down: ${o.body.slice(0, 300)}`;
    if (o.status !== 503) return `${what}: ${o.body.slice(0, 300)}`;
    // Issue 35: a refusal says when to try again.
    if (!o.retryAfter || !/^\d+$/.test(o.retryAfter)) return `${what} without a Retry-After in seconds: ${o.body.slice(0, 200)}`;
    if (!o.contentType.includes('application/json')) return `${what} as ${o.contentType || 'no content type'}: ${o.body.slice(0, 300)}`;
    try {
      const { error } = JSON.parse(o.body) as { error?: { code?: unknown; message?: unknown } };
      if (typeof error?.code === 'string' && /^[A-Z][A-Z0-9_]*$/.test(error.code) && typeof error.message === 'string' && error.message) return undefined;
    } catch {
      // Reported below.
    }
    return `${what}: not the contract's error body: ${o.body.slice(0, 300)}`;
  }

  interface Readiness {
    name: string;
    status: number;
    ms: number;
    body: string;
    /** The body's `status`: ok, degraded or unavailable. */
    state: string;
    checks: Record<string, boolean>;
  }

  async function readyz(name: string): Promise<Readiness> {
    const service = e2e.suite.services[name];
    if (!service) throw new Error(`no service ${name}`);
    const o = await timed(`${name} /readyz`, `${service.url}/readyz`);
    let checks: Record<string, boolean> = {};
    let state = '';
    try {
      const parsed = JSON.parse(o.body) as { status?: unknown; checks?: Record<string, boolean> };
      checks = parsed.checks ?? {};
      state = String(parsed.status);
    } catch {
      // An unreadable body has no checks.
    }
    return { name, status: o.status, ms: o.ms, body: o.error ?? o.body, state, checks };
  }

  /** Polls a service's /readyz until `ok` holds; the answer that did, or the last one seen. */
  async function readyzUntil(name: string, ok: (r: Readiness) => boolean, timeoutMs: number): Promise<{ ok: boolean; last: Readiness; ms: number }> {
    const started = Date.now();
    let last: Readiness | undefined;
    const met = await waitFor(async () => ok((last = await readyz(name))), { timeoutMs, intervalMs: 200 }).catch(() => false);
    return { ok: met, last: last ?? (await readyz(name)), ms: Date.now() - started };
  }

  /** Prints the warnings and errors each service logged lately: evidence for a failure. */
  const logProblems = (): void => {
    const problems = Object.fromEntries(
      Object.entries(e2e.suite.services).flatMap(([name, s]) => {
        const lines = warningLines(s)
          .slice(-3)
          .map((l) => l.slice(0, 300));
        return lines.length > 0 ? [[name, lines]] : [];
      }),
    );
    console.log(`service warnings and errors:\n${JSON.stringify(problems, null, 2)}`);
  };

  /** The processing jobs of some assets (the latest 100 jobs): evidence for a failure. */
  async function processingJobsOf(ids: string[]): Promise<unknown[]> {
    const jobs = await e2e.api.call('GET', '/api/v1/jobs?type=processing&page_size=100');
    return ((jobs.body?.items ?? []) as Array<{ asset_ids: string[] }>).filter((j) => j.asset_ids.some((id) => ids.includes(id)));
  }

  // What the tests below share, in order.
  let baseAsset = '';
  let cdnLink = '';
  const accepted: Array<{ id: string; when: 'before' | 'during' }> = [];
  /** The files of uploads refused during the outage. */
  const refused: string[] = [];
  let resumedAt = 0;
  /** Each service's first 200 `ok` from /readyz after it came back (started at once, awaited later). */
  let recovery: Promise<Array<{ name: string; ok: boolean; ms: number; last: Readiness }>> | undefined;
  let afterRecovery = '';

  it(`is ready before the outage, with ${outage.dependency} among the readiness checks of every service that uses it`, async () => {
    const before = await Promise.all(Object.keys(e2e.suite.services).map(readyz));
    expect(before.filter((r) => r.status !== 200 || r.state !== 'ok')).toEqual([]);

    // An asset that is OK before the outage: read, updated, downloaded and linked while NATS is down.
    baseAsset = await e2e.api.upload(makePng(64, 48), 'base.png');
    expect((await e2e.api.settled(baseAsset)).status).toBe('OK');
    const link = await e2e.api.call('GET', `/api/v1/assets/${baseAsset}/get_link`);
    expect(link.status).toBe(200);
    cdnLink = String(link.body.url);
    expect(cdnLink.startsWith(e2e.suite.cdn)).toBe(true);

    expect(
      Object.fromEntries(
        before.filter((r) => dependents.includes(r.name)).map((r) => [r.name, Object.keys(r.checks).filter((c) => c === outage.readiness[r.name])]),
      ),
    ).toEqual(Object.fromEntries(dependents.map((name) => [name, [outage.readiness[name]]])));
  });

  it(`answers every request within a few seconds with ${outage.allAccepted ? 'a success' : 'a success or a 503 and the error body'} while ${outage.dependency} is down`, async () => {
    // Uploads accepted just before the stop, their processing under way when NATS goes: the last one is large
    // enough (decoding and resizing take a second or more) that NATS stops while conversion works on it.
    const big = await sharp({
      create: { width: 3000, height: 3000, channels: 3, background: { r: 0, g: 0, b: 0 }, noise: { type: 'gaussian', mean: 128, sigma: 40 } },
    })
      .png({ compressionLevel: 1 })
      .toBuffer();
    for (let n = 1; n <= UPLOADS_BEFORE; n++) {
      const init = n === UPLOADS_BEFORE ? { ...uploadInit(n), body: formOf(big, 'big.png') } : uploadInit(n);
      const o = await timed('upload before', uploadUrl(), init);
      expect({ status: o.status, body: o.body.slice(0, 300) }).toMatchObject({ status: 200 });
      accepted.push({ id: assetIdOf(o), when: 'before' });
    }
    const inFlight = accepted[UPLOADS_BEFORE - 1]?.id ?? '';
    await e2e.suite.services.conversion?.waitForLog(new RegExp(`"asset_id":"${inFlight}".*"msg":"conversion started"`), 30_000);

    await outage.stop(e2e.suite);
    const pausedAt = Date.now();
    const { base } = e2e.suite;
    // Each service's own kind of request: auth, metadata (a read, a write through the outbox, a download, jobs),
    // search, link-signing (a link, a delivery on {cdn}), webhook, the gateway's Idempotency-Key store, upload.
    const probes = (round: number): Array<Promise<Outcome>> => [
      timed('login', `${base}/api/v1/login`, post(ADMIN, {})),
      timed('users/me', `${base}/api/v1/users/me`, { headers: auth() }),
      timed('get data', `${base}/api/v1/assets/${baseAsset}/data`, { headers: auth() }),
      timed('update data', `${base}/api/v1/assets/${baseAsset}/data/update`, post({ data: { round }, mode: 'APPEND' })),
      timed('download', `${base}/api/v1/assets/${baseAsset}/content/original/download`, { headers: auth() }),
      timed('jobs', `${base}/api/v1/jobs?type=processing`, { headers: auth() }),
      timed('search', `${base}/api/v1/assets/search`, post({ filters: { name: 'base*' } })),
      timed('collection with Idempotency-Key', `${base}/api/v1/collections`, post({ name: `outage ${round}` }, { ...auth(), 'idempotency-key': randomUUID() })),
      timed('get link', `${base}/api/v1/assets/${baseAsset}/get_link`, { headers: auth() }),
      timed('cdn delivery', cdnLink),
      timed('webhook deliveries', `${base}/api/v1/webhooks/deliveries`, { headers: auth() }),
      timed('upload during', uploadUrl(), uploadInit(100 + round)).then((o) => ({ ...o, fileName: `nats-restart-${100 + round}.png` })),
    ];
    // A round a second for most of the outage, whether the rounds before were answered or not.
    const rounds: Array<Promise<Outcome[]>> = [];
    const probing = (async () => {
      for (let round = 1; Date.now() - pausedAt < OUTAGE_MS - 1000; round++) {
        const at = Date.now() - pausedAt;
        rounds.push(Promise.all(probes(round)).then((list) => list.map((o) => ({ ...o, at }))));
        await new Promise((r) => setTimeout(r, 1000));
      }
    })();
    let down: Array<{ ok: boolean; last: Readiness; ms: number }> = [];
    try {
      // Every service that uses it says, promptly, that it is down: not ready (503), or, for a dependency the
      // services serve without, still ready (200, the pod stays in its Service) but degraded.
      const saysDown = (r: Readiness) =>
        (outage.degraded ? r.status === 200 && r.state === 'degraded' : r.status === 503 && r.state === 'unavailable') &&
        r.checks[outage.readiness[r.name] ?? ''] === false;
      down = await Promise.all(dependents.map((name) => readyzUntil(name, saysDown, PROMPT_MS)));
      await probing;
      // The outage itself: the one fixed wait.
      await new Promise((r) => setTimeout(r, Math.max(0, OUTAGE_MS - (Date.now() - pausedAt))));
    } finally {
      await outage.start(e2e.suite);
      resumedAt = Date.now();
      recovery = Promise.all(
        Object.keys(e2e.suite.services).map(async (name) => ({
          name,
          ...(await readyzUntil(name, (r) => r.status === 200 && r.state === 'ok', RECOVERY_MS)),
        })),
      );
    }
    const outcomes = (await Promise.all(rounds)).flat();

    for (const o of outcomes) if (o.probe === 'upload during' && o.status === 200) accepted.push({ id: assetIdOf(o), when: 'during' });
    for (const o of outcomes) if (o.probe === 'upload during' && o.status !== 200 && o.fileName) refused.push(o.fileName);
    const byProbe = outcomes.reduce<Record<string, string[]>>(
      (acc, o) => ((acc[o.probe] ??= []).push(`@${o.at}:${o.error ? 'ERR' : o.status}/${o.ms}ms`), acc),
      {},
    );
    console.log(
      `requests while ${outage.dependency} was down (${OUTAGE_MS} ms; @sent: status/duration):\n${Object.entries(byProbe)
        .map(([p, a]) => `${p}: ${a.join(' ')}`)
        .join('\n')}`,
    );

    const notDown = down.filter((d) => !d.ok).map((d) => ({ name: d.last.name, status: d.last.status, body: d.last.body }));
    const broken = outcomes.map(violation).filter((v) => v !== undefined);
    if (notDown.length > 0 || broken.length > 0) logProblems();
    expect(outcomes.length).toBeGreaterThanOrEqual(Math.floor(OUTAGE_MS / 1000 - 3) * 12);
    // One assertion, so that a failure lists every problem at once.
    const slowReadyz = down.filter((d) => d.last.ms > READYZ_MS).map((d) => ({ name: d.last.name, ms: d.last.ms }));
    expect({ notDown, slowReadyz, broken }).toEqual({ notDown: [], slowReadyz: [], broken: [] });
  });

  it(`recovers by itself within 10 s of ${outage.dependency} coming back: every service ready, every upload accepted before or during the outage OK`, async () => {
    if (!recovery) throw new Error(`${outage.dependency} was not brought back`);
    const ready = await recovery;
    const deadline = resumedAt + RECOVERY_MS;
    const statuses = await Promise.all(
      accepted.map(async ({ id, when }) => {
        const ok = await waitFor(async () => (await e2e.api.call('GET', `/api/v1/assets/${id}/data`)).body?.status === 'OK', {
          timeoutMs: Math.max(1, deadline - Date.now()),
          intervalMs: 200,
        }).catch(() => false);
        return { id, when, status: ok ? 'OK' : String((await e2e.api.call('GET', `/api/v1/assets/${id}/data`)).body?.status), ms: Date.now() - resumedAt };
      }),
    );
    console.log(
      JSON.stringify({ readyMs: Object.fromEntries(ready.map((r) => [r.name, r.ms])), assets: statuses.map((s) => `${s.when} ${s.status} ${s.ms}ms`) }),
    );
    const late = statuses.filter((s) => s.status !== 'OK');
    if (late.length > 0) {
      console.log(`jobs of the assets not OK:\n${JSON.stringify(await processingJobsOf(late.map((s) => s.id)))}`);
      logProblems();
    }
    expect(accepted.filter((a) => a.when === 'before')).toHaveLength(UPLOADS_BEFORE);
    const notReady = ready.filter((r) => !r.ok).map((r) => ({ name: r.name, status: r.last.status, body: r.last.body }));
    expect({ notReady, late }).toEqual({ notReady: [], late: [] });
  });

  it('leaves nothing of an upload it refused: no asset record (issue 35: nothing half-made)', async () => {
    const db = createPool(e2e.suite.databaseOf('metadata'));
    try {
      const { rows } = await db.query<{ name: string; status: string }>('SELECT name, status FROM assets WHERE name = ANY($1::text[])', [refused]);
      console.log(`uploads refused while ${outage.dependency} was down: ${refused.length}`);
      expect(rows).toEqual([]);
    } finally {
      await db.end();
    }
  });

  it('processes a normal upload after the recovery', async () => {
    const o = await timed('upload after', uploadUrl(), uploadInit(999));
    expect({ status: o.status, body: o.body.slice(0, 300) }).toMatchObject({ status: 200 });
    afterRecovery = assetIdOf(o);
    const settled = await e2e.api.settled(afterRecovery, 30_000).catch((error: unknown) => ({ status: `not settled: ${String(error)}` }));
    if (settled.status !== 'OK') {
      console.log(`the upload after the recovery: ${JSON.stringify(settled)}\nits jobs: ${JSON.stringify(await processingJobsOf([afterRecovery]))}`);
      logProblems();
    }
    expect(settled.status).toBe('OK');
  });

  it('announces exactly one file-processed per asset on ASSET_EVENTS', async () => {
    // From the start of the stream, as a subscriber connecting now sees it.
    const events = await watchAssetEvents(e2e.suite.natsUrl, e2e.suite.adminSeed);
    try {
      const ids = [baseAsset, ...accepted.map((a) => a.id), afterRecovery];
      const processed = (id: string) => events.seen.filter((e) => e.asset_id === id && e.type === 'file-processed').map((e) => e.status);
      await waitFor(() => ids.every((id) => processed(id).length > 0), { timeoutMs: 10_000 }).catch(() => undefined);
      const odd = ids.filter((id) => processed(id).join() !== 'OK');
      if (odd.length > 0) {
        console.log(`events of the assets without one OK file-processed:\n${JSON.stringify(events.seen.filter((e) => odd.includes(String(e.asset_id))))}`);
        logProblems();
      }
      expect(ids.map((id) => ({ id, processed: processed(id) }))).toEqual(ids.map((id) => ({ id, processed: ['OK'] })));
      // Nor for any other asset twice (an upload the client saw fail that was registered after all).
      const all = events.seen.filter((e) => e.type === 'file-processed').map((e) => e.asset_id);
      expect(all.length).toBe(new Set(all).size);
    } finally {
      await events.close();
    }
  });
}

/** The suite's nats-server stops (a clean shutdown) and starts again on the same port with the same store. */
export const NATS_OUTAGE: Outage = {
  dependency: 'NATS',
  suiteOptions: {},
  allAccepted: true,
  degraded: true,
  stop: async (suite) => natsOf(suite).pause(),
  start: async (suite) => natsOf(suite).resume(),
  // Every service holding a NATS connection (the gateway's readiness is its upstreams').
  readiness: Object.fromEntries(
    ['addon', 'auth', 'conversion', 'link-signing', 'metadata', 'search', 'transcode', 'upload', 'webhook'].map((s) => [s, 'nats']),
  ),
};

/**
 * The suite's own PostgreSQL stops (pg_ctl stop -m fast: every connection is terminated) and starts again on the
 * same port with the same data.
 */
export const POSTGRES_OUTAGE: Outage = {
  dependency: 'PostgreSQL',
  suiteOptions: { ownPostgres: true },
  stop: async (suite) => postgresOf(suite).pause(),
  start: async (suite) => postgresOf(suite).resume(),
  readiness: Object.fromEntries(['addon', 'auth', 'metadata', 'search', 'upload', 'webhook'].map((s) => [s, 'postgres'])),
};

/**
 * The S3 server goes away for the suite: its fault proxy resets every connection and refuses new ones (what the
 * services see when the server process is gone), then lets traffic through again. The shared S3 server itself keeps
 * running for the other test files; a restart of the real server with its data read back is
 * libs/testing/test/durable-s3.int.test.ts.
 */
export const S3_OUTAGE: Outage = {
  dependency: 'S3',
  suiteOptions: { proxies: { s3: true } },
  stop: async (suite) => s3ProxyOf(suite).down(),
  start: async (suite) => s3ProxyOf(suite).pass(),
  readiness: Object.fromEntries(['addon', 'conversion', 'link-signing', 'metadata', 'transcode', 'upload'].map((s) => [s, 's3'])),
};

function natsOf(suite: Suite) {
  if (!suite.nats) throw new Error('the suite runs on no single nats-server');
  return suite.nats;
}

function postgresOf(suite: Suite) {
  if (!suite.postgres) throw new Error('the suite runs on no PostgreSQL of its own');
  return suite.postgres;
}

function s3ProxyOf(suite: Suite) {
  if (!suite.proxies.s3) throw new Error('the suite reaches S3 through no proxy');
  return suite.proxies.s3;
}
