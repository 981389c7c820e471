/**
 * Search at scale (issue 9), against a suite started with deploy/local/up (with RATE_LIMIT_PER_MINUTE=0
 * RATE_LIMIT_ADDRESS_PER_MINUTE=0: the gateway limits each caller to 1200 requests a minute by default).
 *   pnpm exec tsx bench/search.bench.ts [count=100000] [requests=200]
 * Seeds `count` assets by publishing file-saved events to ASSET_EVENTS (as the operators' NATS identity; realistic
 * names, types, sizes, dates and custom data), measures how long the read model takes to hold them all and the
 * indexing lag of single events, then p50/p95/p99 at 1 and 8 concurrent clients of four queries through the
 * gateway; the index size on disk; the EXPLAIN plan of the keyword + filters query; then the replay command's
 * work (empty the model, rebuild it from the streams, as the search identity) timed, and the row count and a
 * query's answer compared with the live model's. Prints one JSON line.
 * `count` 0 seeds nothing and measures the model as it is (a second run over the same 100,000 assets); SKIP_REPLAY=1
 * leaves out the replay. Beside each keyword query's figures through {base}: the same match run straight on the
 * search database (`sqlOnly`: the match and its facets as the service sends them, without HTTP, the gateway, the
 * stored set and the first page), so the database's share is seen apart; `…StoredSqlOnly`, what the service asks of
 * the database per search (the match ranked, capped and stored by one statement, the facets beside it, then the first
 * page's assets); `cpuMsPerSearch`, the CPU each process of the suite spent per search at one client (from /proc:
 * comparable across runs on a busy machine, where the latencies are not); the plan of the keyword's stored match;
 * and the load average of the run.
 */
import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { jetstream } from '@nats-io/jetstream';
import { createPool } from '@dam/db';
import { assetEventSubject, connectNats } from '@dam/events';
import { SearchIndexRepository } from '../services/search/src/adapters/search-index.repository';
import { PgSearchIndex } from '../services/search/src/adapters/search.repository';
import { RESULT_CAP, searchRequest } from '../services/search/src/domain/search-request';
import { natsStreamReplay } from '../services/search/src/adapters/stream-replay';
import { replayIndex } from '../services/search/src/use-cases/replay-index.use-case';
import { api, cpuSeconds, DATA, envOf, login, meterSuiteCpu, percentile, processTree } from './support';

const count = Number(process.argv[2] ?? 100_000);
const requests = Number(process.argv[3] ?? 200);

const WORDS = [
  'beach',
  'sunset',
  'mountain',
  'city',
  'portrait',
  'product',
  'launch',
  'team',
  'office',
  'forest',
  'river',
  'summer',
  'winter',
  'campaign',
  'logo',
  'banner',
  'studio',
  'night',
  'street',
  'event',
];
const TYPES = ['image/jpeg', 'image/png', 'image/webp', 'video/mp4', 'application/pdf', 'text/plain'];
const CAMERAS = ['X100', 'A7', 'R5', 'Z6', 'GR3'];
const pick = <T>(list: readonly T[], i: number): T => list[i % list.length] as T;

function assetEvent(i: number, version = 1) {
  const id = `bench${randomBytes(14).toString('hex')}`.slice(0, 32);
  const upload = new Date(Date.UTC(2020, 0, 1) + ((i * 7919 * 60_000) % (6 * 365 * 86_400_000))).toISOString();
  const type = pick(TYPES, i * 7);
  const ext = type.split('/')[1] === 'jpeg' ? 'jpg' : type.split('/')[1];
  const name = `${pick(WORDS, i)}_${pick(WORDS, i * 3 + 1)}_${i}.${ext}`;
  const data = { rating: i % 5, camera: pick(CAMERAS, i), service_search_txt: `${pick(WORDS, i * 11)} ${pick(WORDS, i * 13)} shoot` };
  const asset = {
    id,
    status: 'OK',
    name,
    size: 1000 + ((i * 104729) % 50_000_000),
    checksum: '0'.repeat(32),
    content_type: type,
    creator_id: 1,
    upload_time: upload,
    update_time: upload,
    metadata: {},
    data,
    conversions: {},
    addons_info: {},
  };
  return { id: `bench-${id}-${version}`, type: 'file-saved', time: new Date().toISOString(), group_id: '1', asset_id: id, version, data: asset };
}

/** A process's CPU seconds, 0 once it has ended. */
function cpuOrZero(pid: number): number {
  try {
    return cpuSeconds(pid);
  } catch {
    return 0;
  }
}

async function timeQueries(
  jwt: string,
  body: unknown,
  concurrency: number,
  firstPage?: (b: unknown) => Promise<string>,
  direct?: (b: unknown) => Promise<void>,
) {
  const times: number[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < requests) {
        next += 1;
        const t0 = performance.now();
        if (direct) {
          await direct(body);
          times.push(performance.now() - t0);
          continue;
        }
        const res = firstPage ? { status: 200, body: await firstPage(body) } : await api(jwt, 'POST', '/api/v1/assets/search', body);
        times.push(performance.now() - t0);
        if (res.status !== 200) throw new Error(`search answered ${res.status}: ${JSON.stringify(res.body)}`);
      }
    }),
  );
  const r = (p: number) => Math.round(percentile(times, p) * 10) / 10;
  return { p50: r(50), p95: r(95), p99: r(99) };
}

async function main(): Promise<void> {
  const jwt = await login();
  const seeds = envOf(path.join(DATA, 'secrets', 'nats-users.env'));
  const nc = await connectNats(process.env.NATS_URL ?? 'nats://127.0.0.1:4222', 'admin', seeds.NATS_NKEY_SEED_ADMIN);
  const js = jetstream(nc);
  const db = createPool(`postgres://postgres@127.0.0.1:${readFileSync(path.join(DATA, 'run', 'pg-port'), 'utf8').trim()}/dam_search`, { max: 2 });
  const rows = async () => Number((await db.query("SELECT count(*) AS n FROM search_index WHERE asset_id LIKE 'bench%'")).rows[0].n);

  // Seed: publish in windows of 500 acknowledged publishes.
  const before = await rows();
  const t0 = performance.now();
  for (let i = 0; i < count; i += 500) {
    await Promise.all(
      Array.from({ length: Math.min(500, count - i) }, (_, k) => {
        const e = assetEvent(before + i + k);
        return js.publish(assetEventSubject(1, 'file-saved'), JSON.stringify(e), { msgID: e.id });
      }),
    );
  }
  const publishedMs = performance.now() - t0;
  while ((await rows()) < before + count) await new Promise((r) => setTimeout(r, 250));
  const indexedMs = performance.now() - t0;

  // Indexing lag of single events, one at a time, with the model already full.
  const lags: number[] = [];
  for (let i = 0; i < 50; i++) {
    const e = assetEvent(before + count + i);
    const start = performance.now();
    await js.publish(assetEventSubject(1, 'file-saved'), JSON.stringify(e), { msgID: e.id });
    while ((await db.query('SELECT 1 FROM search_index WHERE asset_id = $1', [e.asset_id])).rowCount === 0) await new Promise((r) => setTimeout(r, 2));
    lags.push(performance.now() - start);
  }

  const keyword = { query: 'beach' };
  const filtered = { query: 'beach', filters: { content_type: ['image/*'], data: { rating: { from: 3 } } }, facets: ['content_type', 'data.camera', 'status'] };
  const byData = { filters: { content_type: ['video/mp4'] }, sort: [{ field: 'data.rating', order: 'desc' }] };
  const capped = (await api(jwt, 'POST', '/api/v1/assets/search', { page_size: 100 })).body;
  const page40 = async () => {
    const r = await api(jwt, 'GET', `/api/v1/assets/search/${capped.search_result_id}/40`);
    if (r.status !== 200) throw new Error(`page 40 answered ${r.status}`);
    return 'ok';
  };
  // The search service's own match (and facets) on the database, as it runs them for group 1's admin.
  const index = new PgSearchIndex(
    createPool(`postgres://postgres@127.0.0.1:${readFileSync(path.join(DATA, 'run', 'pg-port'), 'utf8').trim()}/dam_search`, { max: 16 }),
  );
  const sqlOnly = async (body: unknown) => {
    await index.match(searchRequest.parse(body), { groupId: 1, userId: 1 }, 10_001);
  };
  const owner = { groupId: 1, userId: 1 };
  const storedSqlOnly = async (body: unknown) => {
    const request = searchRequest.parse(body);
    const set = { id: randomBytes(16).toString('hex'), page_size: request.page_size, extended: request.extended };
    const saved = await index.matchAndSave(request, owner, RESULT_CAP, set, owner, 60_000);
    await index.assets(saved.firstIds);
  };
  // CPU per search of each process of the suite (ms), over `requests` searches by one client through {base}.
  // PostgreSQL's postmaster: the parent of its checkpointer (what the pid file names, found from the server itself).
  const checkpointer = Number((await db.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'")).rows[0]?.pid);
  const checkpointerStat = readFileSync(`/proc/${checkpointer}/stat`, 'utf8');
  const postmaster = Number(checkpointerStat.slice(checkpointerStat.lastIndexOf(')') + 2).split(' ')[1]);
  // Each process of its tree apart: a backend that ends meanwhile (a pool's idle connection) takes its CPU with it,
  // which a sum over the tree would count as negative.
  const pgCpu = () => new Map(processTree(postmaster).map((pid) => [pid, cpuOrZero(pid)]));
  const cpuPerSearch = async (body: unknown) => {
    const meter = meterSuiteCpu();
    const pg0 = pgCpu();
    await timeQueries(jwt, body, 1);
    const pg = [...pgCpu()].reduce((sum, [pid, s]) => sum + s - (pg0.get(pid) ?? 0), 0);
    const perSearch = (s: number) => Math.round((s * 1000 * 10) / requests) / 10;
    // The suite's other processes (PostgreSQL's tree sum left out: see above).
    const others = Object.entries(meter.stop()).filter(([name]) => name !== 'postgres');
    return { postgres: perSearch(pg), ...Object.fromEntries(others.map(([name, s]) => [name, perSearch(s)])) };
  };
  const load = [loadavg()[0] ?? 0];
  const queries: Record<string, unknown> = {};
  for (const c of [1, 8]) {
    queries[`c${c}`] = {
      keyword: await timeQueries(jwt, keyword, c),
      keywordSqlOnly: await timeQueries(jwt, keyword, c, undefined, sqlOnly),
      keywordStoredSqlOnly: await timeQueries(jwt, keyword, c, undefined, storedSqlOnly),
      keywordTwoFiltersThreeFacets: await timeQueries(jwt, filtered, c),
      keywordTwoFiltersThreeFacetsSqlOnly: await timeQueries(jwt, filtered, c, undefined, sqlOnly),
      keywordTwoFiltersThreeFacetsStoredSqlOnly: await timeQueries(jwt, filtered, c, undefined, storedSqlOnly),
      filterSortByData: await timeQueries(jwt, byData, c),
      page40OfCappedSet: await timeQueries(jwt, undefined, c, page40),
    };
    load.push(loadavg()[0] ?? 0);
  }
  const cpuMsPerSearch = { keyword: await cpuPerSearch(keyword), keywordTwoFiltersThreeFacets: await cpuPerSearch(filtered) };
  const size = (
    await db.query(
      "SELECT pg_size_pretty(pg_total_relation_size('search_index')) AS total, pg_size_pretty(pg_indexes_size('search_index')) AS indexes, pg_size_pretty(pg_total_relation_size('search_docs')) AS docs",
    )
  ).rows[0];
  const plan = (
    await db.query(
      `EXPLAIN (ANALYZE, BUFFERS, FORMAT TEXT) SELECT asset_id FROM search_index WHERE group_id = 1 AND indexed AND NOT deleted
       AND tsv @@ to_tsquery('simple', unaccent('beach:*')) AND content_type LIKE 'image/%'
       AND (jsonb_typeof(data -> 'rating') = 'number' AND (data ->> 'rating')::numeric >= 3) ORDER BY asset_id LIMIT 10001`,
    )
  ).rows.map((r: { 'QUERY PLAN': string }) => r['QUERY PLAN']);
  // The keyword's match as the service stores it (one statement), analyzed in place of running it.
  let storedPlan: string[] = [];
  const explaining = new PgSearchIndex({
    query: async (text: string, values: unknown[] = []) => {
      if (!text.includes('INSERT INTO result_sets')) return db.query(text, values);
      storedPlan = (await db.query(`EXPLAIN (ANALYZE, BUFFERS, FORMAT TEXT) ${text}`, values)).rows.map((r: { 'QUERY PLAN': string }) => r['QUERY PLAN']);
      return { rows: [{ first_ids: [], first_scores: [], total: 0, capped: false, facets: {}, first_assets: [] }] };
    },
  } as unknown as ConstructorParameters<typeof PgSearchIndex>[0]);
  const kw = searchRequest.parse(keyword);
  await explaining
    .matchAndSave(kw, owner, RESULT_CAP, { id: randomBytes(16).toString('hex'), page_size: kw.page_size, extended: false }, owner, 60_000)
    .catch((error: unknown) => {
      storedPlan = [`not analyzed: ${String(error)}`];
    });

  // Replay: the same work as `pnpm --filter @dam/search replay`, as the search identity, then the same answers.
  const replayed = process.env.SKIP_REPLAY === '1' ? 'skipped' : await replayAndCompare(jwt, db, filtered, seeds.NATS_NKEY_SEED_SEARCH as string);
  console.log(
    JSON.stringify({
      count,
      rows: await rows(),
      seed: { publishedMs: Math.round(publishedMs), indexedMs: Math.round(indexedMs), eventsPerSecond: Math.round(count / (indexedMs / 1000)) },
      indexingLagMs: { p50: Math.round(percentile(lags, 50)), p99: Math.round(percentile(lags, 99)) },
      loadAverage: load.map((l) => Math.round(l * 10) / 10),
      queries,
      cpuMsPerSearch,
      cappedSet: { total: capped.total, total_is_capped: capped.total_is_capped },
      size,
      replay: replayed,
      plan,
      storedPlan,
    }),
  );
  await db.end();
  await nc.close();
  process.exit(0);
}

/** The replay command's work, timed, and the row count and one answer compared with the live model's. */
async function replayAndCompare(jwt: string, db: ReturnType<typeof createPool>, filtered: unknown, seed: string) {
  const liveRows = Number((await db.query('SELECT count(*) AS n FROM search_index WHERE indexed')).rows[0].n);
  const liveAnswer = (await api(jwt, 'POST', '/api/v1/assets/search', filtered)).body;
  const searchNc = await connectNats(process.env.NATS_URL ?? 'nats://127.0.0.1:4222', 'search', seed);
  const replay = await replayIndex({ model: new SearchIndexRepository(db), streams: natsStreamReplay(searchNc) });
  await searchNc.close();
  const replayedAnswer = (await api(jwt, 'POST', '/api/v1/assets/search', filtered)).body;
  const replayedRows = Number((await db.query('SELECT count(*) AS n FROM search_index WHERE indexed')).rows[0].n);
  return {
    ...replay,
    eventsPerSecond: Math.round(replay.events / (replay.ms / 1000)),
    liveRows,
    replayedRows,
    answerEqual: JSON.stringify([liveAnswer.total, liveAnswer.facets]) === JSON.stringify([replayedAnswer.total, replayedAnswer.facets]),
  };
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
