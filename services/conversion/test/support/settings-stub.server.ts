import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SERVICE_TOKEN_HEADER, createServiceVerifier, parseTrustedKeys } from '@dam/auth-tokens';
import { serviceIdentities } from '@dam/testing';

/** Key pairs for these tests: conversion processes get `SERVICE_KEY`, the stub trusts conversion alone. */
export const identities = serviceIdentities();

/** What the stub answers for one group: a settings record, or a failing status (auth down). */
export type SettingsAnswer = { status: 200; body: unknown } | { status: number };

/**
 * Stands in for auth's `GET /internal/v1/groups/:id/settings` (auth is another service). Answers can change
 * per call, so a test can make auth fail a few times and then recover.
 */
export async function startSettingsStub(answer: (groupId: string, call: number) => SettingsAnswer) {
  const calls = new Map<string, number>();
  // As auth does: settings hold the webhook secret, so only conversion's fresh token for this request passes.
  const verifier = createServiceVerifier({ service: 'auth', trusted: parseTrustedKeys(identities.trustedKeys(['conversion'])) });
  const server: Server = createServer((req, res) => {
    try {
      const token = req.headers[SERVICE_TOKEN_HEADER];
      verifier.verify(typeof token === 'string' ? token : undefined, req.method ?? '', req.url ?? '');
    } catch {
      res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":{"code":"INVALID_SERVICE_TOKEN","message":"no"}}');
      return;
    }
    const match = /^\/internal\/v1\/groups\/([^/]+)\/settings$/.exec(req.url ?? '');
    if (req.method !== 'GET' || !match?.[1]) {
      res.writeHead(404).end();
      return;
    }
    const groupId = decodeURIComponent(match[1]);
    const call = (calls.get(groupId) ?? 0) + 1;
    calls.set(groupId, call);
    const a = answer(groupId, call);
    if ('body' in a) res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(a.body));
    else res.writeHead(a.status, { 'content-type': 'application/json' }).end('{"error":{"code":"DOWN","message":"down"}}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    calls: (groupId: string) => calls.get(groupId) ?? 0,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
