import type { NatsConnection } from '@nats-io/nats-core';
import { startNats, type TestNats } from '@dam/testing';
import { connectNats, natsIdempotencyStore } from '../src';

/** CONTRACT §13's kept responses in JetStream KV, as the gateway and upload use them (their own identities). */
describe('natsIdempotencyStore', () => {
  let server: TestNats;
  const open: NatsConnection[] = [];
  const as = async (identity: 'gateway' | 'upload') => {
    const nc = await connectNats(server.url, identity, server.seed(identity));
    open.push(nc);
    return nc;
  };
  const response = { fingerprint: 'f1', status: 201, contentType: 'application/json', body: Buffer.from('{"id":1}').toString('base64') };

  beforeAll(async () => {
    server = await startNats();
  });
  afterAll(async () => {
    for (const nc of open) await nc.close();
    await server.stop();
  });

  it('gives a key to one request at a time, keeps its answer, frees it again after a failure', async () => {
    const gateway = await natsIdempotencyStore(await as('gateway'));
    const upload = await natsIdempotencyStore(await as('upload'));
    // Two replicas claim the same key at once: exactly one wins.
    const claims = await Promise.all([gateway.claim('k1'), upload.claim('k1')]);
    expect(claims.map((c) => c.kind).sort()).toEqual(['claimed', 'running']);
    const won = claims.find((c) => c.kind === 'claimed') as { kind: 'claimed'; token: number };
    await gateway.keep('k1', won.token, response);
    expect(await upload.claim('k1')).toEqual({ kind: 'done', response });

    const second = await gateway.claim('k2');
    expect(second.kind).toBe('claimed');
    await gateway.release('k2', (second as { token: number }).token);
    expect((await upload.claim('k2')).kind).toBe('claimed');
  });

  it('takes over a key whose request stalled longer than the running limit (its process died), and the stale one cannot write', async () => {
    // The second claim (two KV round trips) must come within the running limit: 1 s leaves a loaded machine room.
    const store = await natsIdempotencyStore(await as('gateway'), { runningTtlMs: 1_000 });
    const first = (await store.claim('k3')) as { kind: 'claimed'; token: number };
    expect((await store.claim('k3')).kind).toBe('running');
    await new Promise((r) => setTimeout(r, 1_100));
    const next = await store.claim('k3');
    expect(next.kind).toBe('claimed');
    await expect(store.keep('k3', first.token, response)).rejects.toThrow();
    await store.keep('k3', (next as { token: number }).token, response);
    expect(await store.claim('k3')).toEqual({ kind: 'done', response });
  });
});
