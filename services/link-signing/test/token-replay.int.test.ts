import type { Server } from 'node:http';
import { createServer } from 'node:http';
import { bucketReplayStore, createServiceVerifier, parseTrustedKeys, type ReplayStore } from '@dam/auth-tokens';
import { connectNats, openServiceTokenBucket } from '@dam/events';
import { createHttpApp, finishApp } from '@dam/http';
import { createLogger } from '@dam/logging';
import { listen, scaled, serviceIdentities, startNats, type TestNats } from '@dam/testing';
import type { NatsConnection } from '@nats-io/nats-core';

/**
 * Security review I6: the single use of a service token held per process, so a token captured on the wire could be
 * sent to another replica within its minute. Two replicas of link-signing, each with its own NATS connection (as
 * the link-signing identity, with its permissions), share the SERVICE_TOKENS bucket: the second use is refused.
 */
const identities = serviceIdentities();
const logger = createLogger({ service: 'link-signing', level: 'silent' });
const PATH = '/api/v1/assets/get_link';
let nats: TestNats;
const connections: NatsConnection[] = [];
const servers: Server[] = [];

beforeAll(async () => {
  nats = await startNats();
});
afterAll(async () => {
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  await Promise.all(connections.map((nc) => nc.close()));
  await nats.stop();
});

async function replica(replayUnavailable: 'open' | 'closed' = 'closed'): Promise<string> {
  const nc = await connectNats(nats.url, 'link-signing', nats.seed('link-signing'));
  connections.push(nc);
  const replay: ReplayStore = bucketReplayStore(await openServiceTokenBucket(nc, { replicas: 1 }));
  const verifier = createServiceVerifier({
    service: 'link-signing',
    trusted: parseTrustedKeys(identities.trustedKeys(['gateway'])),
    replay,
    replayUnavailable,
  });
  const app = createHttpApp({ logger });
  app.post(PATH, verifier.guard({ callers: ['gateway'], principal: 'none' }), (req, res) => {
    res.json({ ok: true, ids: (req.body as { ids?: unknown }).ids });
  });
  const server = createServer(finishApp(app, logger));
  servers.push(server);
  return listen(server);
}

describe('service tokens are single-use across replicas (security review I6)', () => {
  it('a token used at one replica is refused at another; a fresh one passes at both', async () => {
    const one = await replica();
    const two = await replica();
    const body = JSON.stringify({ ids: ['a'] });
    const headers = () => ({
      'content-type': 'application/json',
      ...identities.headers('gateway', { audience: 'link-signing', method: 'POST', path: PATH, body }),
    });
    const send = (base: string, h: Record<string, string>) => fetch(`${base}${PATH}`, { method: 'POST', headers: h, body });

    const token = headers();
    expect((await send(one, token)).status).toBe(200);
    const replayed = await send(two, token);
    expect(replayed.status).toBe(401);
    expect(((await replayed.json()) as { error: { code: string } }).error.code).toBe('INVALID_SERVICE_TOKEN');
    // And back at the first one, from its own memory.
    expect((await send(one, token)).status).toBe(401);
    expect((await send(two, headers())).status).toBe(200);
    expect((await send(one, headers())).status).toBe(200);
  });

  it('while NATS is away a replica answers at once from its own memory (the default, open), and still refuses a token it saw', async () => {
    const one = await replica('open');
    const body = JSON.stringify({ ids: ['b'] });
    const token = { 'content-type': 'application/json', ...identities.headers('gateway', { audience: 'link-signing', method: 'POST', path: PATH, body }) };
    const send = () => fetch(`${one}${PATH}`, { method: 'POST', headers: token, body, signal: AbortSignal.timeout(scaled(5000)) });
    await nats.pause();
    try {
      expect((await send()).status).toBe(200);
      expect((await send()).status).toBe(401);
    } finally {
      await nats.resume();
    }
  });
});
