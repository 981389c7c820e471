import { createHash } from 'node:crypto';
import { makePng, scaled, waitFor } from '@dam/testing';
import { watchAssetEvents } from '../e2e/events';
import { useSuite } from '../e2e/suite';

/**
 * Issue 35, "Work without the bus", for resumable uploads: with NATS stopped, a tus upload (creation, PATCHes of its
 * chunks, the last one making the asset) is accepted on every request's first attempt, and its asset is OK soon
 * after NATS is back, with one file-processed. Each PATCH takes the upload's lease in upload's database
 * (tus_locks); while the lease was a key of the NATS KV bucket TUS_LOCKS, the first PATCH here answered 503.
 */
const e2e = useSuite({}, { services: ['gateway', 'upload', 'metadata', 'auth', 'conversion'] });

const b64 = (s: string) => Buffer.from(s).toString('base64');
const md5 = (b: Buffer) => createHash('md5').update(b).digest('hex');

describe('NATS down: resumable (tus) uploads (issue 35)', () => {
  it('takes a tus upload (creation, PATCHes, finish) while NATS is down; its asset is OK once NATS is back', async () => {
    const { upload } = e2e.suite;
    const nats = e2e.suite.nats;
    if (!nats) throw new Error('the suite runs on no single nats-server');
    const endpoint = `${upload}/api/v1/uploads/tus`;
    const headers = { authorization: `Bearer ${e2e.jwt}`, 'tus-resumable': '1.0.0' };
    const png = makePng(64, 48);
    // Three PATCHes: each takes and releases the upload's lease; the last one makes the asset.
    const cuts = [0, Math.floor(png.length / 3), Math.floor((2 * png.length) / 3), png.length];
    const answers: string[] = [];
    let assetId: string | null = null;
    let resumedAt = 0;

    await nats.pause();
    try {
      await waitFor(
        async () => {
          const body = (await (await fetch(`${upload}/readyz`)).json()) as { checks?: Record<string, boolean> };
          return body.checks?.nats === false;
        },
        { timeoutMs: scaled(10_000), intervalMs: 200, description: 'upload reporting NATS down' },
      );
      const created = await fetch(endpoint, {
        method: 'POST',
        headers: { ...headers, 'upload-length': String(png.length), 'upload-metadata': `filename ${b64('tus-bus-down.png')},filetype ${b64('image/png')}` },
        signal: AbortSignal.timeout(scaled(20_000)),
      });
      answers.push(`POST ${created.status}`);
      expect({ status: created.status, body: created.status === 201 ? '' : await created.text() }).toEqual({ status: 201, body: '' });
      const url = created.headers.get('location') as string;
      for (let i = 0; i < cuts.length - 1; i++) {
        const res = await fetch(url, {
          method: 'PATCH',
          headers: { ...headers, 'upload-offset': String(cuts[i]), 'content-type': 'application/offset+octet-stream' },
          body: png.subarray(cuts[i], cuts[i + 1]),
          signal: AbortSignal.timeout(scaled(20_000)),
        });
        answers.push(`PATCH ${i + 1} ${res.status}`);
        // Accepted on its first attempt (before: 503, the lock's bucket unreachable).
        expect({ patch: i + 1, status: res.status, body: res.status === 204 ? '' : await res.text() }).toEqual({ patch: i + 1, status: 204, body: '' });
        expect(res.headers.get('upload-offset')).toBe(String(cuts[i + 1]));
        assetId = res.headers.get('x-asset-id') ?? assetId;
      }
      // HEAD of the finished upload's asset: it was made through Upload Asset's path while the bus was down.
      expect(assetId).toMatch(/^[A-Za-z0-9]{32}$/);
    } finally {
      await nats.resume();
      resumedAt = Date.now();
    }
    console.log(`tus requests with NATS stopped: ${answers.join(', ')}`);

    const id = assetId as unknown as string;
    const data = await e2e.api.call('GET', `/api/v1/assets/${id}/data`);
    expect(data.body).toMatchObject({ id, name: 'tus-bus-down.png', size: png.length, checksum: md5(png) });
    const ok = await waitFor(async () => (await e2e.api.call('GET', `/api/v1/assets/${id}/data`)).body?.status === 'OK', {
      timeoutMs: scaled(10_000),
      intervalMs: 200,
    }).catch(() => false);
    console.log(`after NATS came back: ${id} ${ok ? 'OK' : 'not OK'} at ${Date.now() - resumedAt} ms`);
    expect((await e2e.api.call('GET', `/api/v1/assets/${id}/data`)).body?.status).toBe('OK');
    const events = await watchAssetEvents(e2e.suite.natsUrl, e2e.suite.adminSeed);
    try {
      const processed = () => events.seen.filter((e) => e.asset_id === id && e.type === 'file-processed').map((e) => e.status);
      await waitFor(() => processed().length > 0, { timeoutMs: scaled(10_000) }).catch(() => undefined);
      expect(processed()).toEqual(['OK']);
    } finally {
      await events.close();
    }
  });
});
