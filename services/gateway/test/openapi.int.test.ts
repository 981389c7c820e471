import http, { type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parse } from 'yaml';
import { createLogger } from '@dam/logging';
import { freePort, serviceIdentities } from '@dam/testing';
import { createGatewayApp } from '../src/app';

let server: Server;
let gw: string;
let close: () => void;

beforeAll(async () => {
  // Nothing upstream is needed for the document: every upstream points at a closed port.
  const dead = `http://127.0.0.1:${await freePort()}`;
  const gateway = createGatewayApp({
    logger: createLogger({ service: 'gateway-test', level: 'silent' }),
    jwtSecret: 'gw-openapi-test-jwt-secret-0123456789',
    signer: serviceIdentities().signer('gateway'),
    upstreams: { auth: dead, metadata: dead, search: dead, 'link-signing': dead, webhook: dead },
    limits: { perPrincipal: { perMinute: 60, burst: 1 } },
  });
  close = gateway.close;
  server = http.createServer(gateway.app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  gw = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  close();
  await new Promise((r) => server.close(r));
});

describe('GET /api/v1/openapi.json|yaml', () => {
  it('answers the JSON document without credentials', async () => {
    const res = await fetch(`${gw}/api/v1/openapi.json`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const body = (await res.json()) as { openapi: string; paths: Record<string, unknown> };
    expect(body.openapi).toMatch(/^3\.1\.\d+$/);
    expect(Object.keys(body.paths)).toContain('/api/v1/assets/{asset_id}/content/{key}/download');
  });

  it('answers the YAML as written, the same document', async () => {
    const [yamlRes, jsonRes] = await Promise.all([fetch(`${gw}/api/v1/openapi.yaml`), fetch(`${gw}/api/v1/openapi.json`)]);
    expect(yamlRes.status).toBe(200);
    expect(yamlRes.headers.get('content-type')).toMatch(/^application\/yaml/);
    expect(parse(await yamlRes.text())).toEqual(await jsonRes.json());
  });

  it('is not spent from a caller budget, while routed paths still need credentials', async () => {
    for (let i = 0; i < 3; i += 1) {
      const res = await fetch(`${gw}/api/v1/openapi.json`);
      await res.body?.cancel();
      expect(res.status).toBe(200);
    }
    const routed = await fetch(`${gw}/api/v1/users`);
    expect(routed.status).toBe(401);
    expect(((await routed.json()) as { error: { code: string } }).error.code).toBe('UNAUTHENTICATED');
  });
});
