/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies and Kubernetes objects are untyped JSON here */
/**
 * The NetworkPolicies proven against real traffic (issue 31): every service records each connection it opens
 * (deploy/local/record-flows.mjs) while requests go down every path between the services, and each connection seen
 * must be admitted by the rendered policies of both overlays (deploy/k8s/network-policy-eval.ts); so must the
 * requests of this process to the public addresses (the edges, and the object store for presigned links), taken as
 * the ingress controller's, from the namespace the overlay's dam-cluster names. The manifests
 * of 5232870 blocked gateway -> minio (review D1: downloads through the API), which this test names.
 * env: DAM_RECORD_FLOWS: a directory to keep the recorded connections in (suite-<n>/<service>.jsonl, workloads.json, and
 *      observed.txt named by workload; a temporary one by default)
 *      DAM_FLOWS_K8S_DIR (default <repo>/k8s): the k8s/ tree whose overlays are built, e.g. an older commit's
 *      (`git archive <commit> k8s | tar -x -C /tmp/old`, then DAM_FLOWS_K8S_DIR=/tmp/old/k8s).
 */
import http, { type Server } from 'node:http';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { jetstream } from '@nats-io/jetstream';
import { connectNats, jobCommand, publishEvent } from '@dam/events';
import { listen, makeVideo, waitFor } from '@dam/testing';
import { admittedBetweenWorkloads, buildOverlay, describeVerdict, withoutCaller, workloadPod } from '../../deploy/k8s/network-policy-eval';
import { decideObserved, INGRESS, observedFlows, recordClients, type ObservedFlow } from './flow-recording';
import { ALL_SERVICES, useSuite } from './suite';

/** Where the services record: kept when DAM_RECORD_FLOWS names it, a temporary directory otherwise. */
const FLOWS = process.env.DAM_RECORD_FLOWS || mkdtempSync(path.join(os.tmpdir(), 'dam-flows-'));
const K8S_DIR = process.env.DAM_FLOWS_K8S_DIR ?? path.resolve(__dirname, '..', '..', 'k8s');
const OVERLAYS = ['dev', 'prod'] as const;

const e2e = useSuite({ transcode: { HLS_SEGMENT_SECONDS: '1' } }, { services: ALL_SERVICES, recordFlows: FLOWS });
const { call, upload, settled } = e2e.api;
const auth = () => ({ authorization: `Bearer ${e2e.jwt}` });

let receiver: Server;
let hookUrl: string;
const delivered: string[] = [];

beforeAll(async () => {
  receiver = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      delivered.push(String(req.headers['x-asset-event']));
      res.end();
    });
  });
  hookUrl = `${await listen(receiver)}/hooks`;
});
afterAll(async () => {
  await new Promise((r) => receiver?.close(r));
  if (!process.env.DAM_RECORD_FLOWS) rmSync(FLOWS, { recursive: true, force: true });
});

const ok = async (res: Response | Promise<Response>, what: string): Promise<Buffer> => {
  const r = await res;
  const body = Buffer.from(await r.arrayBuffer());
  if (r.status !== 200) throw new Error(`${what}: ${r.status} ${body.toString().slice(0, 300)}`);
  return body;
};
const jobDone = (jobId: number, what: string) =>
  waitFor(async () => ((await call('GET', `/api/v1/jobs/${jobId}`)).body.status === 'COMPLETED' ? true : undefined), { timeoutMs: 90_000, description: what });

let observed: ObservedFlow[] = [];

describe('the NetworkPolicies against the connections the services really open', () => {
  it('goes down every path between the services: login, upload, downloads, links, search, webhooks, jobs, data, delete', async () => {
    // This process stands for the ingress controller: its requests to the public addresses are its flows.
    const clients = recordClients();
    // Webhooks (auth keeps the settings; webhook calls out), and a key (link-signing asks auth about it).
    expect((await call('PATCH', '/api/v1/settings', { webhooks: { urls: [hookUrl] } })).status).toBe(200);
    const key = (await call('POST', '/api/v1/api_keys', { name: 'flows', role: 'ADMIN' })).body.key as string;

    // Upload (upload -> auth, metadata, object store, NATS), processing (conversion), a video (transcode).
    const png = await sharp({ create: { width: 320, height: 240, channels: 3, background: '#2a6' } })
      .png()
      .toBuffer();
    const image = await upload(png, 'flows.png');
    expect((await settled(image, 90_000)).status).toBe('OK');
    // The image as the group's watermark: auth asks metadata whether it is the group's own, transcode fetches it.
    expect((await call('PATCH', '/api/v1/settings', { conversions: { watermark_asset_id: image } })).status).toBe(200);
    const video = await upload(await makeVideo({ seconds: 1, width: 640, height: 360 }), 'flows.mp4');

    // Downloads of an original and of a conversion through the API: the gateway streams them from the object store (D1).
    expect((await ok(fetch(`${e2e.suite.base}/api/v1/assets/${image}/content/original/download`, { headers: auth() }), 'download original')).equals(png)).toBe(
      true,
    );
    await ok(fetch(`${e2e.suite.base}/api/v1/assets/${image}/content/thumb/download`, { headers: auth() }), 'download thumb');
    // Get Conversion transformed on demand (metadata -> conversion), and a conversion added by hand.
    await ok(fetch(`${e2e.suite.base}/api/v1/assets/${image}/conversions/thumb?w=50&format=png`, { headers: auth() }), 'transform');
    const form = new FormData();
    form.append('file', new Blob([png]), 'poster.png');
    await ok(fetch(`${e2e.suite.base}/api/v1/assets/${image}/content/poster1`, { method: 'POST', headers: auth(), body: form }), 'add conversion');

    // Links: object_storage (presigned; fetched as a client would) and cdn (the edge reads the object store), as a user and as a key.
    const storage = await call('GET', `/api/v1/assets/${image}/get_link?link_type=object_storage`);
    expect(storage.status).toBe(200);
    expect((await ok(fetch(storage.body.url), 'object_storage link')).equals(png)).toBe(true);
    for (const as of [auth(), { 'x-service-api-key': key }]) {
      const cdn = await call('GET', `/api/v1/assets/${image}/get_link?link_type=cdn`, undefined, as);
      expect(cdn.status).toBe(200);
      expect((await ok(fetch(cdn.body.url), 'cdn link')).equals(png)).toBe(true);
    }

    // Data update (metadata), then search (its read model follows the events).
    expect((await call('POST', `/api/v1/assets/${image}/data/update`, { data: { service_search_txt: 'flowmarker' }, mode: 'APPEND' })).status).toBe(200);
    await waitFor(
      async () => ((await call('POST', '/api/v1/assets/search', { query: 'flowmarker' })).body?.results as any[] | undefined)?.some((a) => a.id === image),
      {
        description: 'search finds the updated data',
      },
    );

    // Jobs: a processing job (conversion) and an addon job (addon).
    const processed = await call('POST', `/api/v1/assets/${image}/process`, { keys: ['deepzoom'] });
    expect(processed.status).toBe(202);
    const addon = await call('POST', `/api/v1/assets/${image}/addons/text_extraction`);
    expect(addon.status).toBe(202);
    await jobDone(processed.body.job_id, 'the processing job');
    await jobDone(addon.body.job_id, 'the addon job');
    expect((await settled(video, 120_000)).status).toBe('OK');
    // A watermarked rendition: transcode -> metadata for the watermark's source.
    const marked = await call('POST', `/api/v1/assets/${video}/process`, { keys: ['360p-wm-video'] });
    expect(marked.status).toBe(202);
    await jobDone(marked.body.job_id, 'the watermarked transcode');
    expect((await call('GET', `/api/v1/assets/${video}/data`)).body.conversions['360p-wm-video']).toBeDefined();
    // Commands without the settings a job carries (sent by the previous release during a rolling upgrade, or opened
    // while auth could not answer): conversion and transcode read the group's settings from auth themselves.
    const nc = await connectNats(e2e.suite.natsUrl, 'flows-test', e2e.suite.adminSeed);
    try {
      const js = jetstream(nc);
      const group = String((JSON.parse(Buffer.from(e2e.jwt.split('.')[1] ?? '', 'base64url').toString()) as { gid: number }).gid);
      for (const [worker, asset, job] of [
        ['conversion', image, processed.body.job_id],
        ['transcode', video, marked.body.job_id],
      ] as const) {
        const data = (await call('GET', `/api/v1/assets/${asset}/data`)).body;
        const commands = jobCommand(worker);
        const command = {
          id: `job-${job}-run-99`,
          job_id: job,
          attempt: 99,
          type: 'processing',
          group_id: group,
          asset_id: asset,
          source_checksum: data.checksum,
          content_type: data.content_type,
        };
        await publishEvent(js, commands.subject, commands.schema, command, { msgId: command.id });
      }
      await waitFor(
        () => {
          const seen = observedFlows(e2e.suite.flows ?? '');
          return ['conversion', 'transcode'].every((w) => seen.some((o) => o.from === w && o.to === 'auth')) ? true : undefined;
        },
        { timeoutMs: 60_000, description: 'conversion and transcode asking auth for the settings of a job without them' },
      );
    } finally {
      await nc.close();
    }

    // Delete, and the webhooks of it all delivered.
    expect((await call('POST', `/api/v1/assets/${image}/delete`, { keys: ['original'] })).status).toBe(200);
    await waitFor(() => (delivered.includes('file-processed') && delivered.includes('file-deleted') ? true : undefined), {
      timeoutMs: 30_000,
      description: 'webhooks delivered',
    });
    // The delivery log (gateway -> webhook).
    expect((await call('GET', '/api/v1/webhooks/deliveries')).status).toBe(200);

    const recorded = e2e.suite.flows;
    if (!recorded) throw new Error('the suite records no flows');
    observed = [...observedFlows(recorded), ...clients.stop(recorded)];
    writeFileSync(path.join(recorded, 'observed.txt'), observed.map((o) => `${o.from} -> ${o.to} (${o.address}:${o.port})\n`).join(''));
    // The paths the requests above must have taken, as the services opened them.
    const pairs = new Set(observed.map((o) => `${o.from} -> ${o.to}`));
    for (const expected of [
      'gateway -> minio',
      'gateway -> metadata',
      'gateway -> auth',
      'gateway -> link-signing',
      'gateway -> search',
      'gateway -> webhook',
      'auth -> metadata',
      'transcode -> metadata',
      'upload -> minio',
      'upload -> metadata',
      'link-signing -> minio',
      'metadata -> conversion',
      'conversion -> minio',
      'transcode -> minio',
      'addon -> minio',
      'webhook -> external',
      ...['gateway', 'upload', 'link-signing', 'minio'].map((w) => `${INGRESS} -> ${w}`),
      ...ALL_SERVICES.map((s) => `${s} -> nats`),
      ...['metadata', 'auth', 'search', 'webhook', 'addon'].map((s) => `${s} -> postgresql`),
    ]) {
      expect([expected, pairs.has(expected)]).toEqual([expected, true]);
    }
  });

  it('knows every destination it saw: a workload of the suite, or the webhook receiver outside', () => {
    const receiverPort = Number(new URL(hookUrl).port);
    expect(observed.length).toBeGreaterThan(0);
    expect(observed.filter((o) => o.to === 'external' && !(o.from === 'webhook' && o.port === receiverPort))).toEqual([]);
  });

  describe.each(OVERLAYS)('the %s overlay', (overlay) => {
    it('admits every connection observed', () => {
      const objects = buildOverlay(K8S_DIR, overlay);
      const decided = decideObserved(objects, observed);
      expect(decided.length).toBeGreaterThanOrEqual(observed.length);
      expect(decided.filter((d) => !d.verdict.admitted).map((d) => describeVerdict(d.flow, d.verdict))).toEqual([]);
    });

    it('admits nothing between its own workloads that the traffic did not use', () => {
      const used = new Set(
        decideObserved(buildOverlay(K8S_DIR, overlay), observed).map(
          (d) => `${d.flow.from.name} -> ${d.flow.to.kind === 'pod' ? d.flow.to.name : d.observed.to}`,
        ),
      );
      // The edge's purges of the {cdn} cache tier, which the suite does not run (test/e2e/cache-tier.e2e.test.ts does).
      used.add('link-signing -> cdn-cache');
      const admitted = admittedBetweenWorkloads(buildOverlay(K8S_DIR, overlay));
      expect(admitted.length).toBeGreaterThan(30);
      expect(admitted.filter((pair) => !used.has(pair))).toEqual([]);
    });

    it("would block downloads through the API with the gateway left out of the object store's policy (D1)", () => {
      const objects = buildOverlay(K8S_DIR, overlay);
      const gateway = workloadPod(objects, 'gateway');
      const minio = workloadPod(objects, 'minio');
      if (!gateway || !minio) throw new Error('no gateway or minio workload');
      const d1 = decideObserved(withoutCaller(objects, gateway, minio), observed).filter((d) => !d.verdict.admitted);
      expect(d1.map((d) => `${d.observed.from} -> ${d.observed.to}`)).toEqual(['gateway -> minio']);
    });
  });
});
