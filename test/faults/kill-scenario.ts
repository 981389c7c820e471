import { mkdir, writeFile } from 'node:fs/promises';
import http, { type Server } from 'node:http';
import path from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import sharp from 'sharp';
import { ASSET_EVENTS, connectNats } from '@dam/events';
import { listen, makePng, makeVideo, repoRoot, scaled, testMinioClient, warningLines, type ServiceProcess } from '@dam/testing';
import { watchAssetEvents, type SeenEvent } from '../e2e/events';
import type { Overrides, SuiteInUse } from '../e2e/suite';

/**
 * Issue 14, "Faults": every service of the suite is SIGKILLed in turn, at a seeded random moment, while uploads (with
 * processing), data updates, links and deletes run; each comes back after a short random pause. Afterwards, within a
 * bounded time, every request must have ended in the state the client was promised, and the system must agree with
 * itself: one `file-processed` per asset, every webhook delivered, search equal to metadata, no object in the bucket
 * that no asset record owns.
 *
 * What each answer promises (and so what is a violation):
 * - An upload answered 2xx: each of its assets ends `OK` (or in the trash when the workload deleted it). `ERROR` is
 *   not accepted: every file is a valid image or video, and every kill here is one the job system is built to survive
 *   (a job is handed out again up to JOB_MAX_ATTEMPTS times, and no worker is killed that often), so an `ERROR` means
 *   a crash lost work. An upload answered 4xx (other than 429) is a violation: each request is valid.
 * - An upload that failed (5xx, reset, no answer) is ambiguous: metadata may have committed just before the failure
 *   reached the client, as with any request whose answer is lost. Then the asset exists under its unique file name and
 *   must end `OK` like an accepted one; otherwise nothing of it may remain in the bucket once the reaper ran.
 * - A delete answered 2xx: the asset is in the trash (Get Data 404 `ASSET_IN_TRASH`), out of search, its conversions
 *   gone. A failed delete is ambiguous: in the trash or live, but consistent either way.
 * - An update answered 200 (applied) or 202 (queued): its key is in the asset's data at the end (unless deleted).
 * - A link answered 200: it serves the original's bytes at the end, unless the asset was deleted.
 * - Every non-2xx answer has the contract's error body; no request goes unanswered for REQUEST_TIMEOUT_MS.
 */

/** The suite's services, every one of which the scenario can kill. */
export { ALL_SERVICES } from '../e2e/suite';

export interface KillScenarioOptions {
  /** Upload requests (a few carry two files). */
  uploads: number;
  /** Upload requests in flight at once. */
  concurrency: number;
  /** Services to SIGKILL, each once per mention (in an order shuffled by the seed). */
  kills: readonly string[];
  /** Seed of every random choice (the plan, the kill moments and pauses); default KILL_SEED or a random one. */
  seed?: number;
  /** Every n-th upload is a large noisy image (multipart towards S3, seconds of conversion); 0 for none. */
  largeEvery?: number;
  /** Short videos among the uploads, so transcode has work when it is killed. */
  videos?: number;
  /** How long the system may take to agree with itself after the workload. */
  convergeMs?: number;
  log?: (line: string) => void;
}

export interface KillRecord {
  service: string;
  /** ms after the workload started. */
  at: number;
  /** From the kill until the restarted process answered /readyz. */
  downMs: number;
  pauseMs: number;
  /** Starts it took to have it ready again (more than one: a start not ready within 30 s). */
  attempts: number;
}

export interface KillScenarioReport {
  seed: number;
  uploadRequests: number;
  files: number;
  /** Requests per operation and outcome (2xx, 4xx, 5xx, network). */
  outcomes: Record<string, Record<string, number>>;
  kills: KillRecord[];
  workloadMs: number;
  /** From the end of the workload until every check passed; undefined when they never did within convergeMs. */
  convergedMs: number | undefined;
  assets: { created: number; ok: number; trashed: number; registeredDespiteFailure: number };
  events: number;
  webhookDeliveries: number;
  objects: number;
  violations: string[];
}

/**
 * Env the scenario needs over startSuite's: the recovery timers compressed so a bounded wait covers them (a killed
 * worker's job comes back after ACK_WAIT_MS or JOB_LEASE_MS, an interrupted upload's object goes after
 * ORPHAN_GRACE_MS), and no rate limit (the polling of many assets is not what is tested).
 */
export function killScenarioOverrides(): Overrides {
  const noLimits = { RATE_LIMIT_PER_MINUTE: '0', RATE_LIMIT_ADDRESS_PER_MINUTE: '0' };
  const worker = { ACK_WAIT_MS: '10000', JOB_HEARTBEAT_MS: '2000' };
  return {
    gateway: noLimits,
    // The grace must stay well above the refresh (a third of it) even on a loaded machine: a live upload's entry
    // that looks stale would have its object reaped under it.
    upload: { ...noLimits, ORPHAN_GRACE_MS: '6000', ORPHAN_REAP_INTERVAL_MS: '1000' },
    metadata: { JOB_LEASE_MS: '10000', JOB_SWEEP_INTERVAL_MS: '1000', OBJECT_DELETIONS_INTERVAL_MS: '500' },
    conversion: worker,
    transcode: worker,
    addon: worker,
    // A delivery whose sender died is taken again once its lease (twice the timeout plus 30 s) runs out.
    webhook: { WEBHOOK_TIMEOUT_MS: '5000' },
  };
}

/** A request that got no answer in this long is abandoned and reported: a client must see a failure, not hang. */
const REQUEST_TIMEOUT_MS = 30_000;
const GROUP = '1';

/** mulberry32: small, seedable, good enough to spread kill moments. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function scenarioSeed(given?: number): number {
  if (given !== undefined) return given >>> 0;
  const env = process.env.KILL_SEED;
  if (env && /^\d+$/.test(env)) return Number(env) >>> 0;
  return Math.floor(Math.random() * 2 ** 32) >>> 0;
}

type Kind = 'small' | 'large' | 'video';

interface FilePlan {
  name: string;
  kind: Kind;
  width: number;
  height: number;
  /** Update Data requests, in order, each adding its own key. */
  updates: Array<{ key: string; async: boolean }>;
  /** Deleted at once, while it is likely still processing. */
  deleteEarly: boolean;
  earlyDelayMs: number;
  /** Deleted after its updates. */
  deleteLate: boolean;
  link: boolean;
}

interface UploadPlan {
  index: number;
  files: FilePlan[];
}

interface KillPlan {
  service: string;
  /** From the previous service's return (or the start) to the kill. */
  delayMs: number;
  /** Down this long before the restart. */
  pauseMs: number;
}

/** About how long a killed service takes to start again and answer /readyz (tsx, on a loaded 2-core machine). */
const RESTART_ESTIMATE_MS = 3000;
const RESTART_ATTEMPTS = 3;

function planOf(seed: number, opts: KillScenarioOptions): { uploads: UploadPlan[]; kills: KillPlan[] } {
  const rnd = prng(seed);
  const between = (lo: number, hi: number) => lo + Math.floor(rnd() * (hi - lo + 1));
  const videoEvery = opts.videos ? Math.max(1, Math.floor(opts.uploads / opts.videos)) : 0;
  let updateSeq = 0;
  const uploads: UploadPlan[] = [];
  for (let index = 0; index < opts.uploads; index++) {
    const kind: Kind =
      videoEvery && index % videoEvery === Math.floor(videoEvery / 2)
        ? 'video'
        : opts.largeEvery && index % opts.largeEvery === opts.largeEvery - 1
          ? 'large'
          : 'small';
    const count = kind === 'small' && rnd() < 0.15 ? 2 : 1;
    const files: FilePlan[] = [];
    for (let f = 0; f < count; f++) {
      // A large image is often deleted right after its upload, while its conversion is queued or running (the trash
      // must take the outputs the worker writes after it); the others seldom.
      const deleteEarly = rnd() < (kind === 'large' ? 0.5 : 0.08);
      const updates = !deleteEarly && rnd() < 0.5 ? Array.from({ length: between(1, 2) }, () => ({ key: `k${++updateSeq}`, async: rnd() < 0.3 })) : [];
      files.push({
        name: `kill-${seed}-${index}-${f}.${kind === 'video' ? 'mp4' : 'png'}`,
        kind,
        width: kind === 'large' ? 2000 : between(24, 240),
        height: kind === 'large' ? 1500 : between(24, 180),
        updates,
        deleteEarly,
        earlyDelayMs: kind === 'large' ? between(0, 400) : between(0, 1500),
        deleteLate: !deleteEarly && rnd() < 0.15,
        link: !deleteEarly && rnd() < 0.25,
      });
    }
    uploads.push({ index, files });
  }
  // Each service in turn, in an order of the seed's.
  const order = [...opts.kills];
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(rnd() * (i + 1));
    [order[i], order[j]] = [order[j] as string, order[i] as string];
  }
  const kills = order.map((service) => ({ service, delayMs: between(200, 3000), pauseMs: between(200, 2000) }));
  return { uploads, kills };
}

type Op = 'upload' | 'update' | 'delete' | 'link' | 'read';

interface Exchange {
  op: Op;
  /** The upload's number or the asset id. */
  ref: string;
  /** ms after the workload started. */
  sentAt: number;
  ms: number;
  /** 0 when no answer came. */
  status: number;
  code?: string;
  /* eslint-disable-next-line @typescript-eslint/no-explicit-any -- answers are untyped JSON; the checks read them */
  json?: any;
  text: string;
  error?: string;
}

const ok = (e: Exchange) => e.status >= 200 && e.status < 300;
/** The client saw a failure whose outcome it cannot know (the work may have been done before the answer was lost). */
const ambiguous = (e: Exchange) => e.status === 0 || e.status >= 500 || e.status === 429;
const outcomeOf = (e: Exchange) => (e.status === 0 ? 'network' : `${Math.floor(e.status / 100)}xx`);
const describeExchange = (e: Exchange) =>
  `${e.op} ${e.ref} sent at ${e.sentAt} ms: ${e.error ?? `${e.status} ${e.code ?? e.text.slice(0, 160)}`} after ${e.ms} ms`;

interface Delivery {
  webhookId: string;
  event: string;
}

async function startReceiver(): Promise<{ url: string; got: Delivery[]; close(): Promise<void> }> {
  const got: Delivery[] = [];
  const server: Server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      got.push({ webhookId: String(req.headers['webhook-id']), event: String(req.headers['x-asset-event']) });
      res.statusCode = 200;
      res.end();
    });
  });
  const url = `${await listen(server)}/hooks`;
  return {
    url,
    got,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** `fn` over `items`, at most `limit` at once. */
async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array<R>(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      for (let i = next++; i < items.length; i = next++) out[i] = await fn(items[i] as T);
    }),
  );
  return out;
}

/** What the system holds at one moment, read through its public addresses, the bucket and the event stream. */
interface Snapshot {
  events: SeenEvent[];
  /** Get Data of every asset concerned: 200 with the data, or the error's code. */
  records: Map<string, { status: number; code?: string; data?: AssetView }>;
  search: Map<string, AssetView>;
  trashed: Set<string>;
  searchError?: string;
  objects: string[];
  incomplete: string[];
  delivered: Set<string>;
  links: Map<string, { status: number; bytes: number }>;
}

interface AssetView {
  id: string;
  status: string;
  name: string;
  size: number;
  checksum: string;
  data: Record<string, unknown>;
  conversions: Record<string, unknown>;
  errors?: Record<string, string>;
}

export async function runKillScenario(e2e: SuiteInUse, opts: KillScenarioOptions): Promise<KillScenarioReport> {
  const seed = scenarioSeed(opts.seed);
  const log = opts.log ?? ((line: string) => console.log(line));
  // Stretched by TEST_TIME_SCALE: a slower machine replays the kills' work more slowly.
  const convergeMs = scaled(opts.convergeMs ?? 60_000);
  const { suite } = e2e;
  log(
    `kill scenario: seed=${seed} (replay the same plan and kill moments with KILL_SEED=${seed}); ${opts.uploads} uploads, concurrency ${opts.concurrency}, kills ${opts.kills.join(',')}`,
  );
  const plan = planOf(seed, opts);
  const receiver = await startReceiver();
  const events = await watchAssetEvents(suite.natsUrl, suite.adminSeed);
  try {
    return await run();
  } finally {
    await events.close();
    await receiver.close();
  }

  async function run(): Promise<KillScenarioReport> {
    const violations: string[] = [];
    const exchanges: Exchange[] = [];
    let t0 = Date.now();
    const auth = (): Record<string, string> => ({ authorization: `Bearer ${e2e.jwt}` });

    async function send(op: Op, ref: string, url: string, init: RequestInit = {}): Promise<Exchange> {
      const started = Date.now();
      const e: Exchange = { op, ref, sentAt: started - t0, ms: 0, status: 0, text: '' };
      try {
        const res = await fetch(url, { ...init, signal: AbortSignal.timeout(scaled(REQUEST_TIMEOUT_MS)) });
        e.status = res.status;
        e.text = await res.text();
        if (res.headers.get('content-type')?.includes('json') && e.text) {
          e.json = JSON.parse(e.text);
          if (typeof e.json?.error?.code === 'string') e.code = e.json.error.code;
        }
      } catch (error) {
        e.error = String((error as { cause?: unknown }).cause ?? error);
      }
      e.ms = Date.now() - started;
      if (op !== 'read') exchanges.push(e);
      return e;
    }
    const json = (method: string, body: unknown): RequestInit => ({
      method,
      headers: { ...auth(), 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });

    // The webhook first: deliveries are opened for events recorded after the URL is in the settings. A probe asset
    // whose delivery arrives proves the path works before anything is killed.
    const settings = await send('read', 'settings', `${suite.base}/api/v1/settings`, json('PATCH', { webhooks: { urls: [receiver.url] } }));
    if (settings.status !== 200) throw new Error(`could not register the webhook: ${describeExchange(settings)}`);
    const probeName = `kill-${seed}-probe.png`;
    const probe = await uploadFiles('probe', [{ name: probeName, bytes: makePng(40, 30) }]);
    const probeId = probe.json?.files?.[0]?.id as string | undefined;
    if (!ok(probe) || !probeId) throw new Error(`the probe upload failed: ${describeExchange(probe)}`);
    await until(
      () =>
        receiver.got.some(
          (d) =>
            d.event === 'file-processed' && events.seen.some((e) => e.envelope && (e.envelope as { id: string }).id === d.webhookId && e.asset_id === probeId),
        ),
      30_000,
      "the probe asset's file-processed webhook",
    );
    exchanges.length = 0;

    const bytesOf = await contentMaker();
    /** Accepted files: name → asset id. */
    const accepted = new Map<string, string>();
    const perAsset = new Map<string, { updates: Array<{ key: string; e: Exchange }>; deletes: Exchange[]; links: Exchange[] }>();
    const opsOf = (id: string) => {
      let o = perAsset.get(id);
      if (!o) perAsset.set(id, (o = { updates: [], deletes: [], links: [] }));
      return o;
    };
    const uploadExchanges = new Map<number, Exchange>();
    const followUps: Array<Promise<void>> = [];

    async function uploadFiles(ref: string, files: Array<{ name: string; bytes: Buffer }>): Promise<Exchange> {
      const form = new FormData();
      for (const f of files) form.append('file', new Blob([new Uint8Array(f.bytes)]), f.name);
      return send('upload', ref, `${suite.upload}/api/v1/assets/new/content/original/upload`, { method: 'POST', headers: auth(), body: form });
    }

    /** Polls Get Data until the asset left NOT_READY (or the bound passed); failed reads while a service is down are expected. */
    async function settled(id: string, timeoutMs: number): Promise<boolean> {
      const deadline = Date.now() + scaled(timeoutMs);
      while (Date.now() < deadline) {
        const r = await send('read', id, `${suite.base}/api/v1/assets/${id}/data`, { headers: auth() });
        if (r.status === 200 && r.json?.status !== 'NOT_READY') return true;
        if (r.status === 404) return false;
        await sleep(500);
      }
      return false;
    }

    async function followUp(id: string, f: FilePlan): Promise<void> {
      const ops = opsOf(id);
      const del = async () => ops.deletes.push(await send('delete', id, `${suite.base}/api/v1/assets/${id}/delete`, json('POST', { keys: ['original'] })));
      if (f.deleteEarly) {
        await sleep(f.earlyDelayMs);
        await del();
        return;
      }
      if (f.updates.length === 0 && !f.link && !f.deleteLate) return;
      // Update Data refuses a NOT_READY asset (400 ASSET_NOT_READY): wait for processing, as a client would.
      await settled(id, 45_000);
      for (const u of f.updates) {
        const e = await send(
          'update',
          id,
          `${suite.base}/api/v1/assets/${id}/data/update${u.async ? '?async=1' : ''}`,
          json('POST', { data: { [u.key]: u.key }, mode: 'APPEND' }),
        );
        ops.updates.push({ key: u.key, e });
      }
      if (f.link) ops.links.push(await send('link', id, `${suite.base}/api/v1/assets/${id}/get_link`, { headers: auth() }));
      if (f.deleteLate) await del();
    }

    // Uploads are released at an even pace over the time the kills are expected to take, so that every kill lands
    // among uploads, processing and follow-up requests; `concurrency` workers take them in order.
    let released = 0;
    const waiting: Array<() => void> = [];
    const moreReleased = () => new Promise<void>((r) => waiting.push(r));
    let nextUpload = 0;
    const release = (upTo: number) => {
      released = Math.max(released, Math.min(upTo, plan.uploads.length));
      for (const wake of waiting.splice(0)) wake();
    };
    const worker = async () => {
      for (;;) {
        while (nextUpload >= released) {
          if (released >= plan.uploads.length) return;
          await moreReleased();
        }
        const u = plan.uploads[nextUpload++] as UploadPlan;
        const files = await Promise.all(u.files.map(async (f) => ({ name: f.name, bytes: await bytesOf(f) })));
        const e = await uploadFiles(`#${u.index}`, files);
        uploadExchanges.set(u.index, e);
        if (!ok(e)) continue;
        const ids = ((e.json?.files ?? []) as Array<{ id: string; name: string }>).map((x) => x.id);
        u.files.forEach((f, i) => {
          const id = ids[i];
          if (!id) return;
          accepted.set(f.name, id);
          followUps.push(followUp(id, f));
        });
      }
    };

    t0 = Date.now();
    const workers = Array.from({ length: opts.concurrency }, () => worker());
    const window = plan.kills.reduce((ms, k) => ms + k.delayMs + k.pauseMs + RESTART_ESTIMATE_MS, 0);
    let killing = true;
    const releaser = (async () => {
      for (let i = 1; i <= plan.uploads.length && killing; i++) {
        release(i);
        await sleep(window / plan.uploads.length);
      }
    })();
    const kills: KillRecord[] = [];
    /** The killed processes: their logs are evidence too. */
    const retired: ServiceProcess[] = [];
    for (const k of plan.kills) {
      await sleep(k.delayMs);
      const victim = suite.services[k.service];
      if (!victim) throw new Error(`no service ${k.service}`);
      const at = Date.now() - t0;
      victim.kill('SIGKILL');
      await victim.exited;
      retired.push(victim);
      await sleep(k.pauseMs);
      // A start that is not ready within startServiceProcess's 30 s is tried again: on this shared 2-core machine a
      // start can be that slow under other suites' load. One that never comes back is a violation.
      let attempts = 0;
      for (;;) {
        attempts++;
        try {
          await suite.restart(k.service);
          break;
        } catch (error) {
          log(`restart ${attempts} of ${k.service} failed: ${String(error).slice(0, 300)}`);
          if (attempts >= RESTART_ATTEMPTS) {
            violations.push(`${k.service} did not come back after its kill (${attempts} starts): ${String(error).slice(0, 400)}`);
            break;
          }
        }
      }
      const record = { service: k.service, at, downMs: Date.now() - t0 - at, pauseMs: k.pauseMs, attempts };
      kills.push(record);
      log(
        `killed ${record.service} at ${record.at} ms, ready again ${record.downMs} ms later (paused ${record.pauseMs} ms, ${attempts} start${attempts > 1 ? 's' : ''}); uploads answered so far: ${uploadExchanges.size}`,
      );
    }
    killing = false;
    await releaser;
    release(plan.uploads.length);
    await Promise.all(workers);
    // Follow-ups of the last uploads may still be waiting for processing.
    while (followUps.length > 0) await Promise.all(followUps.splice(0));
    const workloadMs = Date.now() - t0;
    log(`workload done in ${workloadMs} ms: ${exchanges.length} requests`);

    for (const e of exchanges) {
      if (e.status === 0) {
        // A reset or refused connection is a failure the client saw; hanging until abandoned is not.
        if (e.ms >= REQUEST_TIMEOUT_MS - 500) violations.push(`no answer within ${REQUEST_TIMEOUT_MS} ms: ${describeExchange(e)}`);
      } else if (!ok(e) && !e.code) violations.push(`an error without the contract's error body: ${describeExchange(e)}`);
      else if (e.status >= 400 && e.status < 500 && e.status !== 429 && !(e.op === 'update' && e.code === 'ASSET_NOT_READY')) {
        violations.push(`a valid request refused: ${describeExchange(e)}`);
      }
    }

    // The names of every file of the plan, to tell which upload request an asset came from.
    const fileOfName = new Map<string, { upload: UploadPlan; file: FilePlan }>();
    for (const u of plan.uploads) for (const f of u.files) fileOfName.set(f.name, { upload: u, file: f });

    const snapshot = async (): Promise<Snapshot> => {
      const seen = [...events.seen];
      const ids = new Set<string>([probeId, ...accepted.values(), ...seen.map((e) => e.asset_id)]);
      const records = new Map<string, { status: number; code?: string; data?: AssetView }>();
      await mapLimit([...ids], 8, async (id) => {
        const r = await send('read', id, `${suite.base}/api/v1/assets/${id}/data`, { headers: auth() });
        records.set(id, { status: r.status, ...(r.code ? { code: r.code } : {}), ...(r.status === 200 ? { data: r.json as AssetView } : {}) });
      });
      const search = new Map<string, AssetView>();
      const trashed = new Set<string>();
      let searchError: string | undefined;
      for (const inTrash of [false, true]) {
        const first = await send(
          'read',
          'search',
          `${suite.base}/api/v1/assets/search`,
          json('POST', { filters: { name: `kill-${seed}-*` }, extended: true, trashed: inTrash, page_size: 100 }),
        );
        if (first.status !== 200) {
          searchError = describeExchange(first);
          continue;
        }
        const pages = [first];
        for (let p = 2; p <= Number(first.json.pages); p++)
          pages.push(await send('read', 'search', `${suite.base}/api/v1/assets/search/${first.json.search_result_id}/${p}`, { headers: auth() }));
        for (const page of pages) {
          if (page.status !== 200) searchError = describeExchange(page);
          for (const a of (page.json?.results ?? []) as AssetView[]) {
            if (inTrash) trashed.add(a.id);
            else search.set(a.id, a);
          }
        }
      }
      const objects: string[] = [];
      const incomplete: string[] = [];
      const s3 = testMinioClient();
      for await (const item of s3.listObjectsV2(suite.bucket, '', true)) if (item.name) objects.push(item.name);
      for await (const item of s3.listIncompleteUploads(suite.bucket, '', true) as AsyncIterable<{ key: string }>) incomplete.push(item.key);
      const links = new Map<string, { status: number; bytes: number }>();
      for (const [id, o] of perAsset) {
        for (const l of o.links) {
          if (!ok(l) || typeof l.json?.url !== 'string') continue;
          const r = await fetch(String(l.json.url), { signal: AbortSignal.timeout(scaled(REQUEST_TIMEOUT_MS)) }).catch(() => undefined);
          links.set(id, { status: r?.status ?? 0, bytes: r ? (await r.arrayBuffer()).byteLength : 0 });
        }
      }
      return {
        events: seen,
        records,
        search,
        trashed,
        ...(searchError ? { searchError } : {}),
        objects,
        incomplete,
        delivered: new Set(receiver.got.map((d) => d.webhookId)),
        links,
      };
    };

    const judge = (
      s: Snapshot,
    ): { violations: string[]; registeredDespiteFailure: number; ok: number; trashed: number; created: number; undelivered: SeenEvent[] } => {
      const v: string[] = [];
      const saved = s.events.filter((e) => e.type === 'file-saved');
      const nameOf = new Map<string, string>();
      for (const e of saved) nameOf.set(e.asset_id, String((e.envelope as { data: { name?: unknown } }).data.name));
      // Every created asset came from exactly one file of one request, and a file became at most one asset.
      const byName = new Map<string, string[]>();
      for (const [id, name] of nameOf) byName.set(name, [...(byName.get(name) ?? []), id]);
      for (const [name, ids] of byName) {
        if (ids.length > 1) v.push(`file ${name} became ${ids.length} assets: ${ids.join(', ')}`);
        if (name !== probeName && !fileOfName.has(name)) v.push(`asset ${ids.join(',')} named ${name} belongs to no request`);
      }
      let registeredDespiteFailure = 0;
      for (const u of plan.uploads) {
        const e = uploadExchanges.get(u.index);
        if (!e) {
          v.push(`upload #${u.index} was never sent`);
          continue;
        }
        for (const f of u.files) {
          const ids = byName.get(f.name) ?? [];
          if (ok(e) && accepted.get(f.name) === undefined) v.push(`upload #${u.index} answered ${e.status} without an asset for ${f.name}`);
          if (ok(e) && ids.length === 0)
            v.push(`upload #${u.index} answered ${e.status} but ${f.name} (${accepted.get(f.name)}) was never announced (file-saved)`);
          if (!ok(e) && ids.length > 0) {
            registeredDespiteFailure++;
            if (!ambiguous(e)) v.push(`upload #${u.index} was refused (${describeExchange(e)}) yet created ${ids.join(',')}`);
          }
        }
      }

      const processed = new Map<string, string[]>();
      for (const e of s.events) if (e.type === 'file-processed') processed.set(e.asset_id, [...(processed.get(e.asset_id) ?? []), String(e.status)]);
      let okCount = 0;
      let trashedCount = 0;
      for (const id of nameOf.keys()) {
        const rec = s.records.get(id);
        const ops = perAsset.get(id);
        const deleted = ops?.deletes.some(ok) ?? false;
        const maybeDeleted = ops?.deletes.some(ambiguous) ?? false;
        const name = nameOf.get(id);
        const what = `asset ${id} (${name})`;
        const fp = processed.get(id) ?? [];
        if (fp.length > 1) v.push(`${what}: ${fp.length} file-processed events (${fp.join(', ')})`);
        if (!rec) {
          v.push(`${what}: not read`);
          continue;
        }
        const inTrash = rec.status === 404 && rec.code === 'ASSET_IN_TRASH';
        if (inTrash) trashedCount++;
        if (deleted && !inTrash) v.push(`${what}: the delete answered 2xx, but Get Data answers ${rec.status} ${rec.code ?? rec.data?.status}`);
        else if (!deleted && inTrash && !maybeDeleted) v.push(`${what}: in the trash though never deleted`);
        else if (!inTrash) {
          if (rec.status !== 200 || !rec.data) {
            v.push(`${what}: Get Data answers ${rec.status} ${rec.code ?? ''}`);
            continue;
          }
          if (rec.data.status !== 'OK')
            v.push(`${what}: ${rec.data.status}${rec.data.errors ? ` ${JSON.stringify(rec.data.errors)}` : ''} (jobs: see metadata)`);
          else okCount++;
          if (rec.data.status === 'OK' && JSON.stringify(fp) !== '["OK"]') v.push(`${what}: OK, but its file-processed events are ${JSON.stringify(fp)}`);
          for (const u of ops?.updates ?? []) {
            if (ok(u.e) && rec.data.data[u.key] !== u.key)
              v.push(`${what}: update ${u.key} answered ${u.e.status}, but the data is ${JSON.stringify(rec.data.data)}`);
          }
          // Search agrees with metadata: found, with the same status, name and custom data.
          const found = s.search.get(id);
          if (!found) v.push(`${what}: live (${rec.data.status}) but not found by search`);
          else if (
            found.status !== rec.data.status ||
            found.name !== rec.data.name ||
            JSON.stringify(sorted(found.data)) !== JSON.stringify(sorted(rec.data.data))
          ) {
            v.push(`${what}: search has ${found.status} ${JSON.stringify(found.data)}, metadata ${rec.data.status} ${JSON.stringify(rec.data.data)}`);
          }
          if (s.trashed.has(id)) v.push(`${what}: live, but search has it in the trash`);
        }
        if (inTrash) {
          if (s.search.has(id)) v.push(`${what}: in the trash, but search still finds it`);
          if (!s.trashed.has(id)) v.push(`${what}: in the trash, but search does not find it there`);
        }
        const link = s.links.get(id);
        if (link && !inTrash && (link.status !== 200 || link.bytes !== rec.data?.size))
          v.push(`${what}: its cdn link answers ${link.status} with ${link.bytes} bytes (size ${rec.data?.size})`);
        if (link && inTrash && link.status === 200) v.push(`${what}: in the trash, but its cdn link still serves it`);
      }
      for (const [id, fp] of processed) if (!nameOf.has(id)) v.push(`file-processed (${fp.join(',')}) for ${id}, which was never saved`);
      if (s.searchError) v.push(`search failed: ${s.searchError}`);
      for (const id of s.search.keys()) if (!nameOf.has(id)) v.push(`search finds ${id}, which metadata never announced`);

      // Every event delivered to the webhook at least once (the delivery's webhook-id is the event id).
      const missing = s.events.filter((e) => !s.delivered.has((e.envelope as { id: string }).id));
      if (missing.length > 0)
        v.push(
          `${missing.length} of ${s.events.length} events never reached the webhook: ${missing
            .slice(0, 10)
            .map((e) => `${e.type} ${e.asset_id}`)
            .join('; ')}`,
        );

      // No orphan: each object belongs to an asset record; an original to a live or trashed asset, a conversion to a
      // live asset, of its current original, under a key it lists. And no asset lost its original.
      const originals = new Set<string>();
      for (const key of s.objects) {
        const original = /^originals\/(\d+)\/([A-Za-z0-9]+)$/.exec(key);
        const conversion = /^conversions\/(\d+)\/([A-Za-z0-9]+)\/([^/]+)\/([^/.]+)/.exec(key);
        if (original && original[1] === GROUP) {
          const id = original[2] as string;
          originals.add(id);
          const rec = s.records.get(id);
          if (!rec || !(rec.status === 200 || rec.code === 'ASSET_IN_TRASH'))
            v.push(`orphan object ${key}: no asset record owns it (${rec ? `${rec.status} ${rec.code ?? ''}` : 'never announced'})`);
        } else if (conversion && conversion[1] === GROUP) {
          const [, , id, checksum, conv] = conversion as unknown as [string, string, string, string, string];
          const rec = s.records.get(id);
          if (!rec?.data) v.push(`orphan object ${key}: its asset is ${rec ? `${rec.status} ${rec.code ?? ''}` : 'unknown'}`);
          else if (rec.data.checksum !== checksum || !Object.hasOwn(rec.data.conversions, conv))
            v.push(`orphan object ${key}: not a conversion the asset lists (${Object.keys(rec.data.conversions).join(',')})`);
        } else v.push(`object ${key} of no known layout`);
      }
      for (const id of nameOf.keys())
        if (!originals.has(id) && s.records.get(id)?.code !== 'ASSET_NOT_FOUND') v.push(`asset ${id} (${nameOf.get(id)}) has no original in the bucket`);
      for (const key of s.incomplete) v.push(`incomplete multipart upload of ${key} left behind`);
      return { violations: v, registeredDespiteFailure, ok: okCount, trashed: trashedCount, created: nameOf.size, undelivered: missing };
    };

    // Bounded convergence: the checks run until they all pass or the time is up; the last verdict is the report.
    const endOfWorkload = Date.now();
    let last: ReturnType<typeof judge> & { snapshot: Snapshot };
    let convergedMs: number | undefined;
    let lastPending = '';
    for (;;) {
      const s = await snapshot();
      last = { ...judge(s), snapshot: s };
      if (last.violations.length === 0) {
        convergedMs = Date.now() - endOfWorkload;
        break;
      }
      if (Date.now() - endOfWorkload > convergeMs) break;
      // What is still to come, when it changes: the slow part of a convergence is visible in a passing run too.
      const pending = last.violations.join('\n    ');
      if (pending !== lastPending) log(`not converged after ${Date.now() - endOfWorkload} ms:\n    ${pending}`);
      lastPending = pending;
      await sleep(2000);
    }
    violations.push(...last.violations);
    // CI shows the end of its log: what the webhook service holds of a missing event goes into the violation itself.
    if (last.undelivered.length > 0) violations.push(`the webhook's view of them: ${await webhookView(last.undelivered)}`);

    const outcomes: Record<string, Record<string, number>> = {};
    for (const e of exchanges) {
      const byOp = (outcomes[e.op] ??= {});
      byOp[outcomeOf(e)] = (byOp[outcomeOf(e)] ?? 0) + 1;
    }
    const report: KillScenarioReport = {
      seed,
      uploadRequests: plan.uploads.length,
      files: plan.uploads.reduce((n, u) => n + u.files.length, 0),
      outcomes,
      kills,
      workloadMs,
      convergedMs,
      assets: { created: last.created, ok: last.ok, trashed: last.trashed, registeredDespiteFailure: last.registeredDespiteFailure },
      events: last.snapshot.events.length,
      webhookDeliveries: receiver.got.length,
      objects: last.snapshot.objects.length,
      violations,
    };
    log(
      [
        `kill scenario seed=${seed}: ${report.uploadRequests} upload requests (${report.files} files), ${kills.length} kills, workload ${workloadMs} ms,`,
        `converged ${convergedMs === undefined ? `NOT within ${convergeMs} ms` : `in ${convergedMs} ms`}; requests ${JSON.stringify(outcomes)};`,
        `assets ${JSON.stringify(report.assets)}; ${report.events} events, ${report.webhookDeliveries} webhook deliveries, ${report.objects} objects;`,
        `${violations.length} violations${violations.length ? `:\n  ${violations.join('\n  ')}` : ''}`,
      ].join('\n'),
    );
    if (violations.length > 0 || process.env.KILL_EVIDENCE === '1') {
      const all = [...retired, ...Object.values(suite.services)];
      if (violations.length > 0) log(`warnings and errors the services logged:\n${problems(all)}`);
      log(`every log line, and every request: ${await keepEvidence(seed, all, exchanges)}`);
    }
    return report;

    /** The deliveries the webhook service logged for `missing` events, and its asset-events durable's state. */
    async function webhookView(missing: SeenEvent[]): Promise<string> {
      const byId = new Map<string, unknown[]>();
      for (let page = 1, pages = 1; page <= pages && page <= 20; page++) {
        const r = await send('read', 'deliveries', `${suite.base}/api/v1/webhooks/deliveries?page=${page}&page_size=100`, { headers: auth() });
        if (r.status !== 200) return `the delivery log answered ${describeExchange(r)}`;
        pages = Math.ceil(Number(r.json.total) / 100);
        for (const d of r.json.items as Array<Record<string, unknown> & { webhook_id: string }>) {
          const { id, status, attempt_count, error, next_retry_at, created_at, finished_at } = d;
          byId.set(d.webhook_id, [...(byId.get(d.webhook_id) ?? []), { id, status, attempt_count, error, next_retry_at, created_at, finished_at }]);
        }
      }
      let durable: string;
      const nc = await connectNats(suite.natsUrl, 'admin', suite.adminSeed).catch(() => undefined);
      try {
        const info = nc ? await (await jetstreamManager(nc)).consumers.info(ASSET_EVENTS, 'webhook-deliveries') : undefined;
        durable = info
          ? JSON.stringify({
              delivered: info.delivered,
              ack_floor: info.ack_floor,
              ack_pending: info.num_ack_pending,
              redelivered: info.num_redelivered,
              pending: info.num_pending,
            })
          : 'not read';
      } catch (error) {
        durable = `not read: ${String(error)}`;
      } finally {
        await nc?.close();
      }
      const webhooks = [...retired, suite.services.webhook].filter((p): p is ServiceProcess => p?.name === 'webhook');
      const short = (l: string) => l.replace(/"service":"webhook","trace_id":"\w+","span_id":"\w+",/, '').slice(0, 300);
      const rows = missing.slice(0, 5).map((e) => {
        const id = (e.envelope as { id: string }).id;
        // Its lines in the webhook's logs: its deliveries are logged by id, its message's troubles by stream seq.
        const ids = ((byId.get(id) ?? []) as Array<{ id?: number }>).map((d) => `"delivery":${d.id},`);
        const lines = webhooks.flatMap((p) =>
          p
            .logs()
            .filter((l) => l.includes(id) || l.includes(`"seq":${e.seq},`) || ids.some((d) => l.includes(d)))
            .map((l) => `${p.pid}: ${short(l)}`),
        );
        return `${e.type} ${e.asset_id} (stream seq ${e.seq}, event ${id}): ${JSON.stringify(byId.get(id) ?? 'no delivery recorded')}; log lines ${JSON.stringify(lines.slice(-4))}`;
      });
      const current = suite.services.webhook;
      const state = current ? await Promise.race([current.exited.then((x) => `exited ${JSON.stringify(x)}`), sleep(50).then(() => 'running')]) : 'absent';
      const warnings = webhooks.flatMap((p) => warningLines(p).map((l) => `${p.pid}: ${short(l)}`)).slice(-3);
      return `${rows.join('; ')}; durable webhook-deliveries ${durable}; the webhook service (pid ${current?.pid}) ${state}, its last warnings ${JSON.stringify(warnings)}`;
    }
  }
}

/** Keys in order, for comparing custom data whatever order the JSON came in. */
function sorted(o: Record<string, unknown> | undefined): Array<[string, unknown]> {
  return Object.entries(o ?? {}).sort(([a], [b]) => a.localeCompare(b));
}

async function until(cond: () => boolean, baseTimeoutMs: number, what: string): Promise<void> {
  const timeoutMs = scaled(baseTimeoutMs);
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await sleep(200);
  }
}

/** Bytes per kind of file; the large images and the video are made once and reused (each upload is its own asset). */
async function contentMaker(): Promise<(f: FilePlan) => Promise<Buffer>> {
  const cache = new Map<string, Promise<Buffer>>();
  const once = (key: string, make: () => Promise<Buffer>) => {
    let p = cache.get(key);
    if (!p) cache.set(key, (p = make()));
    return p;
  };
  return (f) => {
    switch (f.kind) {
      case 'small':
        return Promise.resolve(makePng(f.width, f.height));
      case 'large':
        // Noise does not compress: ~9 MB, so it goes to S3 in parts and takes conversion a second or more.
        return once('large', () =>
          sharp({
            create: { width: f.width, height: f.height, channels: 3, background: { r: 0, g: 0, b: 0 }, noise: { type: 'gaussian', mean: 128, sigma: 40 } },
          })
            .png({ compressionLevel: 1 })
            .toBuffer(),
        );
      case 'video':
        return once('video', () => makeVideo({ seconds: 2, width: 160, height: 120 }));
    }
  };
}

/** Every log line of every process (the killed ones too) and every request, for the diagnosis of a failed run. */
async function keepEvidence(seed: number, processes: ServiceProcess[], exchanges: Exchange[]): Promise<string> {
  const dir = path.join(repoRoot, 'test-artifacts', 'kill-scenario', String(seed));
  await mkdir(dir, { recursive: true });
  for (const p of processes) await writeFile(path.join(dir, `${p.name}-${p.pid}.log`), p.logs().join('\n'));
  await writeFile(path.join(dir, 'requests.jsonl'), exchanges.map((e) => JSON.stringify({ ...e, json: undefined, text: e.text.slice(0, 500) })).join('\n'));
  return dir;
}

/** The warnings and errors each service logged lately: evidence for a report. */
function problems(processes: ServiceProcess[]): string {
  return processes
    .flatMap((s) =>
      warningLines(s)
        .slice(-8)
        .map((l) => `  ${s.name} (pid ${s.pid}): ${l.slice(0, 400)}`),
    )
    .join('\n');
}
