import http, { type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import { assetsExistRequest, assetsExistResponse, internalClient, userStatusResponse } from '../src';

/** Records what each call sent; answers by path. */
function stub(): Promise<{ url: string; seen: Array<{ path: string; headers: IncomingHttpHeaders; body: string }>; close(): Promise<void> }> {
  const seen: Array<{ path: string; headers: IncomingHttpHeaders; body: string }> = [];
  const server: Server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      seen.push({ path: req.url ?? '', headers: req.headers, body });
      const send = (status: number, payload: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(typeof payload === 'string' ? payload : JSON.stringify(payload));
      };
      if (req.url === '/ok') send(200, { existing: ['a'] });
      else if (req.url === '/wrong-shape') send(200, { existing: 'nope' });
      else if (req.url === '/not-json') send(200, '<html>');
      else if (req.url === '/refused') send(400, { error: { code: 'VALIDATION_FAILED', message: 'bad', details: [{ path: 'ids', message: 'x' }] } });
      else if (req.url === '/slow') setTimeout(() => send(200, { existing: [] }), 1000);
      else send(404, 'gone');
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        seen,
        close: () => new Promise((r) => server.close(() => r())),
      }),
    ),
  );
}

const signer = { headers: (t: { audience: string; method: string; path: string; principal?: unknown }) => ({ 'x-dam-service-token': JSON.stringify(t) }) };

describe('internalClient', () => {
  let s: Awaited<ReturnType<typeof stub>>;
  beforeAll(async () => {
    s = await stub();
  });
  afterAll(async () => s.close());

  it('signs the call for its audience, method, path and principal, and parses the answer', async () => {
    const client = internalClient({ baseUrl: `${s.url}/`, audience: 'metadata', signer });
    const principal = { user_id: 1 };
    const result = await client.call({ method: 'POST', path: '/ok', body: { ids: ['x'] }, principal, response: assetsExistResponse, requestId: 'req-1' });
    expect(result).toEqual({ ok: true, status: 200, body: { existing: ['a'], live_keys: [] } });
    const sent = s.seen.at(-1);
    expect(JSON.parse(String(sent?.headers['x-dam-service-token']))).toEqual({
      audience: 'metadata',
      method: 'POST',
      path: '/ok',
      principal,
      body: JSON.stringify({ ids: ['x'] }),
    });
    expect(sent?.headers['x-request-id']).toBe('req-1');
    expect(sent?.headers['content-type']).toBe('application/json');
    expect(JSON.parse(sent?.body ?? '')).toEqual({ ids: ['x'] });
  });

  it('hands other statuses back with the contract error body', async () => {
    const client = internalClient({ baseUrl: s.url, audience: 'metadata', signer });
    expect(await client.call({ method: 'POST', path: '/refused', response: assetsExistResponse })).toEqual({
      ok: false,
      status: 400,
      error: { code: 'VALIDATION_FAILED', message: 'bad', details: [{ path: 'ids', message: 'x' }] },
    });
    expect(await client.call({ method: 'GET', path: '/missing', response: userStatusResponse })).toEqual({ ok: false, status: 404, error: undefined });
  });

  it('throws UNAVAILABLE for an invalid answer, a timeout or an unreachable service', async () => {
    const client = internalClient({ baseUrl: s.url, audience: 'link-signing', signer, timeoutMs: 200 });
    const unavailable = expect.objectContaining({ kind: 'UNAVAILABLE', code: 'LINK_SIGNING_UNAVAILABLE' });
    await expect(client.call({ method: 'GET', path: '/wrong-shape', response: assetsExistResponse })).rejects.toEqual(unavailable);
    await expect(client.call({ method: 'GET', path: '/not-json', response: assetsExistResponse })).rejects.toEqual(unavailable);
    await expect(client.call({ method: 'GET', path: '/slow', response: assetsExistResponse })).rejects.toEqual(unavailable);
    const dead = internalClient({ baseUrl: 'http://127.0.0.1:9', audience: 'link-signing', signer });
    await expect(dead.call({ method: 'GET', path: '/ok', response: z.unknown() })).rejects.toEqual(unavailable);
  });

  it('validates requests with the same schemas the routes use', () => {
    expect(assetsExistRequest.safeParse({ ids: ['a'.repeat(32)] }).success).toBe(true);
    expect(assetsExistRequest.safeParse({ ids: [] }).success).toBe(false);
    expect(assetsExistRequest.safeParse({ ids: ['../etc'] }).success).toBe(false);
  });
});
