/**
 * The production form's edges, through its front door (issue 31, "Run the production form here"): the suite from
 * its images with the rendered dev overlay's configuration, nginx as the ingress with TLS (deploy/production-form).
 * Each client is a real address (127.0.0.x); every URL the suite hands out must work from the outside as it is.
 */
import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, nkeyAuthenticator } from '@nats-io/transport-node';
import sharp from 'sharp';
import { makeVideo, scaled, waitFor } from '@dam/testing';
import { buildOverlay, describeVerdict } from '../../deploy/k8s/network-policy-eval';
import { decideObserved } from '../e2e/flow-recording';
import { formFlows } from './flows';
import { formState, frontDoor, type Reply } from './front-door';

const state = formState();
const request = frontDoor(state);
const [api, cdnHost] = state.publicHosts;
const BASE = `https://${api}`;
const UPLOAD = `https://${state.publicHosts.find((h) => h.startsWith('upload.'))}`;
const S3 = `https://${state.publicHosts.find((h) => h.startsWith('s3.'))}`;
const CDN = `https://${cdnHost}`;

const login = (password: string, from: string): Promise<Reply> =>
  request(`${BASE}/api/v1/login`, {
    method: 'POST',
    from,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: state.adminEmail, password }),
  });

let session: { jwt: string; uploadkey: string };
let png: Buffer;
let assetId: string;
const bearer = () => ({ authorization: `Bearer ${session.jwt}` });

beforeAll(async () => {
  const r = await login(state.adminPassword, '127.0.0.40');
  if (r.status !== 200) throw new Error(`login: ${r.status} ${r.body.toString()}`);
  session = r.json();
  png = await sharp({ create: { width: 96, height: 64, channels: 3, background: '#3a7' } })
    .png()
    .toBuffer();
});

describe('the production form, first install', () => {
  it('ran every init container to success (Kubernetes would hold a failed one in Init:CrashLoopBackOff)', () => {
    expect(state.initFailures).toEqual({});
  });
});

describe('the production form through its ingress', () => {
  it('throttles logins per real client address: one address held back, another still logs in', async () => {
    const guesser = '127.0.0.21';
    const statuses: number[] = [];
    for (let i = 0; i < 8 && !statuses.includes(429); i++) statuses.push((await login('wrong password', guesser)).status);
    expect(statuses).toContain(429);
    // Another client, same account, at once: neither held nor delayed by the guesser's failures.
    expect((await login('wrong password', '127.0.0.22')).status).toBe(401);
    expect((await login(state.adminPassword, '127.0.0.23')).status).toBe(200);
  });

  it('takes a tus upload over https whose every Location is https on the upload host', async () => {
    const metadata = [`filename ${Buffer.from('form.png').toString('base64')}`, `filetype ${Buffer.from('image/png').toString('base64')}`].join(',');
    const created = await request(`${UPLOAD}/api/v1/uploads/tus`, {
      method: 'POST',
      from: '127.0.0.41',
      headers: { 'tus-resumable': '1.0.0', 'upload-length': String(png.length), 'upload-metadata': metadata, 'x-upload-key': session.uploadkey },
    });
    expect(created.status).toBe(201);
    const location = String(created.headers.location);
    expect(location.startsWith(`${UPLOAD}/api/v1/uploads/tus/`)).toBe(true);
    // Two PATCHes and a HEAD between them, each on the Location as given.
    const half = Math.floor(png.length / 2);
    const patch = (offset: number, bytes: Buffer) =>
      request(location, {
        method: 'PATCH',
        from: '127.0.0.41',
        headers: {
          'tus-resumable': '1.0.0',
          'upload-offset': String(offset),
          'content-type': 'application/offset+octet-stream',
          'x-upload-key': session.uploadkey,
        },
        body: bytes,
      });
    const first = await patch(0, png.subarray(0, half));
    expect(first.status).toBe(204);
    const head = await request(location, { method: 'HEAD', from: '127.0.0.41', headers: { 'tus-resumable': '1.0.0', 'x-upload-key': session.uploadkey } });
    expect(head.headers['upload-offset']).toBe(String(half));
    const last = await patch(half, png.subarray(half));
    expect(last.status).toBe(204);
    for (const r of [created, first, head, last]) if (r.headers.location) expect(String(r.headers.location)).toMatch(/^https:\/\//);
    assetId = String(last.headers['x-asset-id']);
    expect(assetId).toMatch(/\S/);
    const data = await waitFor(
      async () => {
        const d = (await request(`${BASE}/api/v1/assets/${assetId}/data`, { headers: bearer() })).json();
        return d.status && d.status !== 'NOT_READY' ? d : undefined;
      },
      { timeoutMs: scaled(120_000), description: 'the uploaded asset processed' },
    );
    expect(data.status).toBe('OK');
  });

  it("holds each host to its Ingress's body limit: 413 above 16m on the API host, a larger upload whole on the upload host", async () => {
    const big = await sharp({ create: { width: 2600, height: 2400, channels: 3, background: '#808080', noise: { type: 'gaussian', mean: 128, sigma: 60 } } })
      .png()
      .toBuffer();
    expect(big.length).toBeGreaterThan(16 * 1024 * 1024);
    const refused = await request(`${BASE}/api/v1/assets/new/content/original/upload`, {
      method: 'POST',
      headers: { ...bearer(), 'content-type': 'application/octet-stream' },
      body: big,
    });
    expect(refused.status).toBe(413);
    const metadata = [`filename ${Buffer.from('big.png').toString('base64')}`, `filetype ${Buffer.from('image/png').toString('base64')}`].join(',');
    const tus = { 'tus-resumable': '1.0.0', 'x-upload-key': session.uploadkey };
    const created = await request(`${UPLOAD}/api/v1/uploads/tus`, {
      method: 'POST',
      headers: { ...tus, 'upload-length': String(big.length), 'upload-metadata': metadata },
    });
    expect(created.status).toBe(201);
    const whole = await request(String(created.headers.location), {
      method: 'PATCH',
      headers: { ...tus, 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' },
      body: big,
    });
    expect(whole.status).toBe(204);
    expect(String(whole.headers['x-asset-id'])).toMatch(/\S/);
  });

  it('transcodes a video (the media image) and serves its rendition through the API', async () => {
    const video = await makeVideo({ seconds: 1, width: 640, height: 360 });
    const metadata = [`filename ${Buffer.from('form.mp4').toString('base64')}`, `filetype ${Buffer.from('video/mp4').toString('base64')}`].join(',');
    const tus = { 'tus-resumable': '1.0.0', 'x-upload-key': session.uploadkey };
    const created = await request(`${UPLOAD}/api/v1/uploads/tus`, {
      method: 'POST',
      headers: { ...tus, 'upload-length': String(video.length), 'upload-metadata': metadata },
    });
    expect(created.status).toBe(201);
    const done = await request(String(created.headers.location), {
      method: 'PATCH',
      headers: { ...tus, 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' },
      body: video,
    });
    expect(done.status).toBe(204);
    const id = String(done.headers['x-asset-id']);
    await waitFor(async () => ((await request(`${BASE}/api/v1/assets/${id}/data`, { headers: bearer() })).json().status === 'OK' ? true : undefined), {
      timeoutMs: scaled(120_000),
      description: 'the video processed',
    });
    // The dev overlay's default profile makes no rendition of a video: one asked for, as a client would.
    const job = await request(`${BASE}/api/v1/assets/${id}/process`, {
      method: 'POST',
      headers: { ...bearer(), 'content-type': 'application/json' },
      body: JSON.stringify({ keys: ['360p-video'] }),
    });
    expect(job.status).toBe(202);
    const jobId = job.json().job_id as number;
    const finished = await waitFor(
      async () => {
        const j = (await request(`${BASE}/api/v1/jobs/${jobId}`, { headers: bearer() })).json();
        return j.status === 'COMPLETED' || j.status === 'ERROR' ? j : undefined;
      },
      { timeoutMs: scaled(180_000), intervalMs: 1000, description: 'the 360p-video job' },
    );
    expect(finished).toMatchObject({ status: 'COMPLETED' });
    const mp4 = await request(`${BASE}/api/v1/assets/${id}/content/360p-video/download`, { headers: bearer() });
    expect(mp4.status).toBe(200);
    expect(mp4.body.subarray(4, 8).toString()).toBe('ftyp');
  });

  it('downloads the original and a conversion through the API', async () => {
    expect(assetId).toBeDefined();
    const original = await request(`${BASE}/api/v1/assets/${assetId}/content/original/download`, { headers: bearer() });
    expect(original.status).toBe(200);
    expect(original.body.equals(png)).toBe(true);
    const thumb = await request(`${BASE}/api/v1/assets/${assetId}/content/thumb/download`, { headers: bearer() });
    expect(thumb.status).toBe(200);
    expect((await sharp(thumb.body).metadata()).width).toBeGreaterThan(0);
  });

  it('hands out an object_storage link on the public S3 host that a client fetches as it is', async () => {
    const link = await request(`${BASE}/api/v1/assets/${assetId}/get_link?link_type=object_storage`, { headers: bearer() });
    expect(link.status).toBe(200);
    const url = String(link.json().url);
    expect(url.startsWith(`${S3}/`)).toBe(true);
    const got = await request(url, { from: '127.0.0.42' });
    expect(got.status).toBe(200);
    expect(got.body.equals(png)).toBe(true);
  });

  it('hands out a cdn link on the cdn host that a client fetches as it is', async () => {
    const link = await request(`${BASE}/api/v1/assets/${assetId}/get_link?link_type=cdn`, { headers: bearer() });
    expect(link.status).toBe(200);
    const url = String(link.json().url);
    expect(url.startsWith(`${CDN}/`)).toBe(true);
    const got = await request(url, { from: '127.0.0.43' });
    expect(got.status).toBe(200);
    expect(got.body.equals(png)).toBe(true);
  });

  it("delivers the asset's events to an outside subscriber through its own durable, named as itself", async () => {
    expect(assetId).toBeDefined();
    const identity = state.subscriber;
    const nc = await connect({
      servers: state.natsServers,
      authenticator: nkeyAuthenticator(new TextEncoder().encode(state.subscriberSeed)),
      inboxPrefix: `_INBOX_${identity}`,
    });
    try {
      const jsm = await jetstreamManager(nc);
      await jsm.consumers.add('ASSET_EVENTS', { durable_name: identity, ack_policy: AckPolicy.Explicit, deliver_policy: DeliverPolicy.All });
      const consumer = await jetstream(nc).consumers.get('ASSET_EVENTS', identity);
      const seen: string[] = [];
      await waitFor(
        async () => {
          const batch = await consumer.fetch({ max_messages: 100, expires: 2000 });
          for await (const m of batch) {
            const event = m.json<{ asset_id: string; type: string }>();
            if (event.asset_id === assetId) seen.push(event.type);
            m.ack();
          }
          return seen.length > 0 ? true : undefined;
        },
        { timeoutMs: scaled(60_000), description: `an event of asset ${assetId} on ASSET_EVENTS` },
      );
      expect(seen.length).toBeGreaterThan(0);
    } finally {
      await nc.close();
    }
  });
});

// Last: the connections everything above made, through the rendered NetworkPolicies of both overlays.
describe.each(['dev', 'prod'])('the %s overlay', (overlay) => {
  it('admits every connection the production form opened (containers, and nginx as the ingress controller)', () => {
    const observed = formFlows(state.dir);
    expect(
      observed
        .filter((o) => o.from === 'ingress-controller')
        .map((o) => o.to)
        .sort(),
    ).toEqual(expect.arrayContaining(['cdn-cache', 'gateway', 'minio', 'upload']));
    expect(observed.filter((o) => o.to === 'external')).toEqual([]);
    const decided = decideObserved(buildOverlay(process.env.DAM_PF_K8S_DIR ?? `${__dirname}/../../k8s`, overlay), observed);
    expect(decided.filter((d) => !d.verdict.admitted).map((d) => describeVerdict(d.flow, d.verdict))).toEqual([]);
  });
});
