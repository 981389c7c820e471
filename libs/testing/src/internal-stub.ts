import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SERVICE_TOKEN_HEADER, createServiceVerifier, parseTrustedKeys } from '@dam/auth-tokens';
import type { ServiceIdentities } from './service-identities';

/** What a stub answers to one call: a JSON body, or a failing status (the service down), after `delayMs` if given. */
export type StubAnswer = ({ status: 200; body: unknown } | { status: number }) & { delayMs?: number };

export interface InternalStub {
  url: string;
  /** How many calls one path got. */
  calls(path: string): number;
  close(): Promise<void>;
}

/**
 * Stands in for another service of the suite on its internal routes: checks the caller's service token as the
 * real service does (audience `service`, only `callers` trusted) and answers what `answer` says, per call, so
 * a test can make a service fail a few times and then recover. Unknown paths (answer undefined) are 404.
 */
export async function startInternalStub(opts: {
  identities: ServiceIdentities;
  service: string;
  callers: readonly string[];
  answer: (method: string, path: string, call: number) => StubAnswer | undefined;
}): Promise<InternalStub> {
  const calls = new Map<string, number>();
  const verifier = createServiceVerifier({ service: opts.service, trusted: parseTrustedKeys(opts.identities.trustedKeys(opts.callers)) });
  const server: Server = createServer((req, res) => {
    try {
      const token = req.headers[SERVICE_TOKEN_HEADER];
      verifier.verify(typeof token === 'string' ? token : undefined, req.method ?? '', req.url ?? '');
    } catch {
      res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":{"code":"INVALID_SERVICE_TOKEN","message":"no"}}');
      return;
    }
    const path = req.url ?? '';
    const call = (calls.get(path) ?? 0) + 1;
    calls.set(path, call);
    const a = opts.answer(req.method ?? '', path, call);
    const send = () => {
      if (!a) res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"code":"NOT_FOUND","message":"no"}}');
      else if ('body' in a) res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(a.body));
      else res.writeHead(a.status, { 'content-type': 'application/json' }).end('{"error":{"code":"DOWN","message":"down"}}');
    };
    if (a?.delayMs) setTimeout(send, a.delayMs);
    else send();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    calls: (path) => calls.get(path) ?? 0,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/**
 * auth's `GET /internal/v1/groups/:id/settings` for the workers that read settings (settings hold the webhook
 * secret, so only their fresh tokens pass). `answer` gets the group id and the call number for that group.
 */
export function startSettingsStub(
  identities: ServiceIdentities,
  answer: (groupId: string, call: number) => StubAnswer,
  callers: readonly string[] = ['conversion'],
): Promise<InternalStub & { settingsCalls(groupId: string): number }> {
  const pathOf = (groupId: string) => `/internal/v1/groups/${encodeURIComponent(groupId)}/settings`;
  return startInternalStub({
    identities,
    service: 'auth',
    callers,
    answer: (method, path, call) => {
      const match = /^\/internal\/v1\/groups\/([^/]+)\/settings$/.exec(path);
      return method === 'GET' && match?.[1] ? answer(decodeURIComponent(match[1]), call) : undefined;
    },
  }).then((stub) => ({ ...stub, settingsCalls: (groupId: string) => stub.calls(pathOf(groupId)) }));
}
