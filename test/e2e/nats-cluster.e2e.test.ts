import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { ASSET_EVENTS, connectNats, DAM_INTERNAL } from '@dam/events';
import { httpOk, makePng, waitFor, type TestNatsCluster, type TestNatsNode } from '@dam/testing';
import { useSuite } from './suite';

// The suite on a 3-node JetStream cluster with every stream at 3 replicas: one node is SIGKILLed in the middle of
// a series of uploads and comes back a few seconds later; nothing may be lost or announced twice.
const ASSETS = 20;
const KILL_AFTER = 6;
const DOWN_MS = 4000;

const e2e = useSuite({}, { natsCluster: { nodes: 3 } });
const { call, upload } = e2e.api;
let cluster: TestNatsCluster;
let admin: NatsConnection;
let jsm: JetStreamManager;

beforeAll(async () => {
  if (!e2e.suite.natsCluster) throw new Error('the suite runs on no cluster');
  cluster = e2e.suite.natsCluster;
  admin = await connectNats(e2e.suite.natsUrl, 'admin', e2e.suite.adminSeed);
  jsm = await jetstreamManager(admin);
});
e2e.beforeStop(() => admin?.close());

/** The stream's replicas and its leader, once it has one and every other peer has caught up with it. */
const streamCluster = (name: string, timeoutMs = 15_000) =>
  waitFor(
    async () => {
      const info = await jsm.streams.info(name);
      const others = info.cluster?.replicas ?? [];
      if (!info.cluster?.leader || others.some((r) => !r.current || r.offline)) return undefined;
      return { replicas: info.config.num_replicas, leader: info.cluster.leader, peers: 1 + others.length };
    },
    { timeoutMs, intervalMs: 200, description: `${name} to have a leader and its replicas current` },
  );

it('runs every stream and the bucket of used service-token ids at 3 replicas, one on each node', async () => {
  for (const name of [ASSET_EVENTS, DAM_INTERNAL, 'DATA_SCHEMAS', 'COLLECTIONS', 'ASSET_PURGES', 'KV_SERVICE_TOKENS']) {
    expect({ name, ...(await streamCluster(name)) }).toMatchObject({ name, replicas: 3, peers: 3 });
  }
  expect(e2e.suite.services.metadata?.logs().some((l) => l.includes('streams ready') && l.includes('"replicas":3'))).toBe(true);
});

it('loses no upload and announces each file-processed once when a NATS node is killed mid-way and restarted', async () => {
  // The ASSET_EVENTS leader: every event of this test is written through it (metadata's outbox waits for its new
  // leader; uploads themselves need no NATS since issue 35).
  const victim: TestNatsNode = cluster.node((await streamCluster(ASSET_EVENTS)).leader);
  const metaLeader = (await cluster.metaLeader()).name;

  const ok: Array<{ n: number; id: string }> = [];
  const failed: Array<{ n: number; error: string; during: 'up' | 'down' | 'restarting' }> = [];
  let phase: 'up' | 'down' | 'restarting' = 'up';
  let outage: Promise<void> | undefined;
  const started = Date.now();

  const send = async (n: number): Promise<void> => {
    try {
      ok.push({ n, id: await upload(makePng(40 + n, 30), `cluster-${n}.png`) });
    } catch (error) {
      failed.push({ n, error: String(error), during: phase });
    }
  };

  for (let n = 1; n <= ASSETS; n++) {
    if (n === KILL_AFTER + 1) {
      await victim.kill();
      phase = 'down';
      outage = (async () => {
        await new Promise((r) => setTimeout(r, DOWN_MS));
        phase = 'restarting';
        await victim.restart();
        phase = 'up';
      })();
    }
    await send(n);
    await new Promise((r) => setTimeout(r, 300));
  }
  await outage;
  // While a stream it needs has no leader (elected again within seconds), a service answers 503 and the client may
  // try again: nothing else (no 500, no hung request).
  expect(failed.filter((f) => !/answered 503/.test(f.error))).toEqual([]);
  // The restarted node is back: uploads the client saw fail are sent again.
  const retried = failed.map((f) => f.n);
  for (const n of retried) {
    await waitFor(
      async () => {
        await send(n);
        return ok.some((o) => o.n === n);
      },
      { timeoutMs: 30_000, intervalMs: 1000, description: `upload ${n} again` },
    );
  }
  const uploadsMs = Date.now() - started;

  // Every upload the client saw succeed ends OK.
  const statuses = await Promise.all(
    ok.map(({ id }) =>
      waitFor(
        async () => {
          const d = await call('GET', `/api/v1/assets/${id}/data`);
          return d.body?.status && d.body.status !== 'NOT_READY' ? (d.body.status as string) : undefined;
        },
        { timeoutMs: 60_000, intervalMs: 250, description: `${id} processed` },
      ),
    ),
  );
  expect(statuses).toEqual(ok.map(() => 'OK'));
  expect(new Set(ok.map((o) => o.n)).size).toBe(ASSETS);

  // ASSET_EVENTS as the cluster stored it (read by sequence as admin): one file-saved and one file-processed per
  // asset, whatever was published again through the failover (the outbox retries, deduplicated by Nats-Msg-Id).
  const { state } = await jsm.streams.info(ASSET_EVENTS);
  const events: Array<{ subject: string; asset_id: string }> = [];
  for (let seq = state.first_seq; seq <= state.last_seq; seq++) {
    const m = await jsm.streams.getMessage(ASSET_EVENTS, { seq });
    if (m) events.push({ subject: m.subject, asset_id: m.json<{ asset_id: string }>().asset_id });
  }
  const count = (id: string, type: string) => events.filter((e) => e.asset_id === id && e.subject.endsWith(`.${type}`)).length;
  expect(ok.map(({ id }) => [count(id, 'file-saved'), count(id, 'file-processed')])).toEqual(ok.map(() => [1, 1]));
  // Nor twice for any other asset (an upload that failed on the client's side but was registered after all).
  const processed = events.filter((e) => e.subject.endsWith('.file-processed')).map((e) => e.asset_id);
  expect(processed.length).toBe(new Set(processed).size);

  // The node rejoined: every stream on three current peers again, and no service gave up.
  const after = await streamCluster(ASSET_EVENTS, 30_000);
  for (const name of [DAM_INTERNAL, 'KV_SERVICE_TOKENS']) expect((await streamCluster(name, 30_000)).peers).toBe(3);
  expect(after.peers).toBe(3);
  for (const [name, service] of Object.entries(e2e.suite.services)) {
    const exited = await Promise.race([service.exited.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 10))]);
    expect({ name, exited }).toEqual({ name, exited: false });
    await waitFor(() => httpOk(`${service.url}/readyz`), { timeoutMs: 20_000, description: `${name} ready` });
  }

  console.log(
    JSON.stringify({
      killed: victim.name,
      metaLeader,
      assetEventsLeaderAfter: after.leader,
      uploadsMs,
      failedUploads: failed.length,
      failures: [...new Set(failed.map((f) => `${f.during}: ${f.error.slice(0, 120)}`))],
      events: events.length,
    }),
  );
});
