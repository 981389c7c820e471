/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are untyped JSON; the assertions check them */
import { makePng, scaled, waitFor } from '@dam/testing';
import { watchAssetEvents } from '../e2e/events';
import { useSuite } from '../e2e/suite';

/**
 * Issue 35, "Work without the bus": with NATS stopped, a write whose records live in PostgreSQL is accepted on its
 * first attempt, uploads included, with or without an Idempotency-Key (CONTRACT §13); a keyed repeat answers the
 * kept response (`Idempotent-Replayed: true`) with no second effect; what the writes cause is delivered once NATS is
 * back (an image uploaded meanwhile is OK soon after, with one file-processed). The kept responses and upload's
 * pending journal are in the gateway's and upload's own databases; while they were in NATS KV buckets, every keyed
 * POST answered 503 IDEMPOTENCY_UNAVAILABLE and every upload 503 UPLOAD_JOURNAL_UNAVAILABLE here.
 */
const e2e = useSuite({}, { services: ['gateway', 'upload', 'metadata', 'auth', 'conversion'] });

interface Answer {
  what: string;
  status: number;
  replayed: string | null;
  ms: number;
  body: any;
}

/**
 * One keyed POST. A repeat sent the moment the first answer arrived may find its response not kept yet (it is kept
 * once the answer is out) and answer 409 IDEMPOTENCY_IN_FLIGHT, as the contract says: `untilSettled` sends it again
 * then, as a client would.
 */
async function send(what: string, url: string, key: string | undefined, body: unknown, untilSettled = false): Promise<Answer> {
  for (let attempt = 1; ; attempt++) {
    const answer = await sendOnce(what, url, key, body);
    if (!untilSettled || answer.status !== 409 || answer.body?.error?.code !== 'IDEMPOTENCY_IN_FLIGHT' || attempt >= 20) return answer;
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function sendOnce(what: string, url: string, key: string | undefined, body: unknown): Promise<Answer> {
  const started = Date.now();
  const multipart = body instanceof FormData;
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${e2e.jwt}`,
      ...(multipart ? {} : { 'content-type': 'application/json' }),
      ...(key === undefined ? {} : { 'idempotency-key': key }),
    },
    body: multipart ? body : JSON.stringify(body),
    signal: AbortSignal.timeout(scaled(20_000)),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text) as unknown;
  } catch {
    // Kept as text: the assertion shows it.
  }
  return { what, status: res.status, replayed: res.headers.get('idempotent-replayed'), ms: Date.now() - started, body: parsed };
}

const formOf = (bytes: Buffer, name: string): FormData => {
  const form = new FormData();
  form.append('file', new Blob([bytes]), name);
  return form;
};

describe('NATS down: writes and uploads (issue 35)', () => {
  /** Uploads accepted while NATS was down, and when NATS came back. */
  const uploaded: string[] = [];
  let resumedAt = 0;

  it('accepts keyed writes on their first attempt on {base} and {upload}, replays a repeat, and makes nothing twice', async () => {
    const { base, upload } = e2e.suite;
    // A file no worker processes (the suite runs none): OK at once, so its data can be updated.
    const asset = await e2e.api.upload(Buffer.from('bus down'), 'bus-down.bin');
    expect((await e2e.api.settled(asset)).status).toBe('OK');
    const collectionsBefore = (await e2e.api.call('GET', '/api/v1/collections')).body.items.length as number;
    const nats = e2e.suite.nats;
    if (!nats) throw new Error('the suite runs on no single nats-server');

    await nats.pause();
    const answers: Answer[] = [];
    try {
      // NATS is gone for the services too: upload's readiness says so (it holds a NATS connection), and stays 200
      // (degraded): it serves without the bus, so it stays in its Service.
      await waitFor(
        async () => {
          const r = await fetch(`${upload}/readyz`);
          const body = (await r.json()) as { status?: string; checks?: Record<string, boolean> };
          return r.status === 200 && body.status === 'degraded' && body.checks?.nats === false;
        },
        { timeoutMs: scaled(10_000), intervalMs: 200, description: 'upload reporting NATS down' },
      );
      const collection = { name: 'made while the bus was down' };
      const update = { data: { bus: 'down' }, mode: 'APPEND' };
      // A source no allow-list admits: metadata records the asset as refused (a final answer) without the ingest job.
      const ingest = { name: 'bus-down.png', key: 'http://192.0.2.1/bus-down.png' };
      const requests: Array<[string, string, string, unknown]> = [
        ['create collection ({base})', `${base}/api/v1/collections`, 'bus-down-collection', collection],
        ['update data ({base})', `${base}/api/v1/assets/${asset}/data/update`, 'bus-down-update', update],
        ['ingest request ({upload})', `${upload}/api/v1/assets/new/content/original/external`, 'bus-down-ingest', ingest],
      ];
      for (const [what, url, key, body] of requests) {
        const first = await send(what, url, key, body);
        const again = await send(`${what}, repeated`, url, key, body, true);
        const reused = await send(`${what}, another body`, url, key, { ...(body as object), other: true }, true);
        answers.push(first, again, reused);
      }
      // Uploads: images (processed once NATS is back), one keyed and repeated (same asset), one without a key.
      const uploadUrl = `${upload}/api/v1/assets/new/content/original/upload`;
      const png = makePng(48, 36);
      const keyedUpload = await send('upload with a key ({upload})', uploadUrl, 'bus-down-upload', formOf(png, 'keyed.png'));
      const keyedAgain = await send('upload with a key ({upload}), repeated', uploadUrl, 'bus-down-upload', formOf(png, 'keyed.png'), true);
      const plainUpload = await send('upload without a key ({upload})', uploadUrl, undefined, formOf(makePng(50, 30), 'plain.png'));
      answers.push(keyedUpload, keyedAgain, plainUpload);
      for (const a of [keyedUpload, plainUpload]) if (a.status === 200) uploaded.push(...(a.body.files as Array<{ id: string }>).map((f) => f.id));
      expect({ status: keyedUpload.status, body: keyedUpload.status === 200 ? '' : keyedUpload.body }).toEqual({ status: 200, body: '' });
      expect({ status: keyedAgain.status, replayed: keyedAgain.replayed, body: keyedAgain.body }).toEqual({
        status: 200,
        replayed: 'true',
        body: keyedUpload.body,
      });
      expect({ status: plainUpload.status, body: plainUpload.status === 200 ? '' : plainUpload.body }).toEqual({ status: 200, body: '' });
    } finally {
      await nats.resume();
      resumedAt = Date.now();
    }
    console.log(
      `keyed requests with NATS stopped (status, Idempotent-Replayed, ms):\n${answers.map((a) => `${a.what}: ${a.status} ${a.replayed ?? '-'} ${a.ms} ms`).join('\n')}`,
    );

    for (let i = 0; i < 9; i += 3) {
      const [first, again, reused] = [answers[i]!, answers[i + 1]!, answers[i + 2]!];
      // Accepted on the first attempt (before: 503 IDEMPOTENCY_UNAVAILABLE).
      expect({ what: first.what, status: first.status < 300 ? 'accepted' : first.status, body: first.status < 300 ? '' : first.body }).toEqual({
        what: first.what,
        status: 'accepted',
        body: '',
      });
      expect(first.replayed).toBeNull();
      expect({ what: again.what, status: again.status, replayed: again.replayed, body: again.body }).toEqual({
        what: again.what,
        status: first.status,
        replayed: 'true',
        body: first.body,
      });
      expect({ what: reused.what, status: reused.status, code: reused.body?.error?.code }).toEqual({
        what: reused.what,
        status: 422,
        code: 'IDEMPOTENCY_KEY_REUSED',
      });
    }
    // No second effect: one collection of that name, the data written once, one asset for the ingest request.
    const collections = (await e2e.api.call('GET', '/api/v1/collections')).body.items as Array<{ name: string }>;
    expect(collections).toHaveLength(collectionsBefore + 1);
    expect(collections.filter((c) => c.name === 'made while the bus was down')).toHaveLength(1);
    expect((await e2e.api.call('GET', `/api/v1/assets/${asset}/data`)).body.data).toMatchObject({ bus: 'down' });
    const ingested = answers[6]!.body as { id: string };
    expect((await e2e.api.call('GET', `/api/v1/assets/${ingested.id}/data`)).status).toBe(200);
  });

  it('processes the uploads accepted while NATS was down once it is back: OK soon after, one file-processed each', async () => {
    expect(uploaded).toHaveLength(2);
    const statuses = await Promise.all(
      uploaded.map(async (id) => {
        const ok = await waitFor(async () => (await e2e.api.call('GET', `/api/v1/assets/${id}/data`)).body?.status === 'OK', {
          timeoutMs: scaled(10_000),
          intervalMs: 200,
        }).catch(() => false);
        return { id, status: ok ? 'OK' : String((await e2e.api.call('GET', `/api/v1/assets/${id}/data`)).body?.status), ms: Date.now() - resumedAt };
      }),
    );
    console.log(`after NATS came back: ${statuses.map((s) => `${s.id} ${s.status} at ${s.ms} ms`).join(', ')}`);
    expect(statuses.map((s) => s.status)).toEqual(uploaded.map(() => 'OK'));
    const events = await watchAssetEvents(e2e.suite.natsUrl, e2e.suite.adminSeed);
    try {
      const processed = (id: string) => events.seen.filter((e) => e.asset_id === id && e.type === 'file-processed').map((e) => e.status);
      await waitFor(() => uploaded.every((id) => processed(id).length > 0), { timeoutMs: scaled(10_000) }).catch(() => undefined);
      expect(uploaded.map((id) => ({ id, processed: processed(id) }))).toEqual(uploaded.map((id) => ({ id, processed: ['OK'] })));
    } finally {
      await events.close();
    }
  });
});
