/**
 * The OpenTelemetry exporter as a platform team wires it (issue 31): only through the standard OTEL_* variables in
 * the ConfigMap, no code or flag of ours. A service's own instrument module (services/gateway/src/instrument.ts,
 * the first import of its main.ts) is started in a child process, as the image starts it, with the environment a
 * ConfigMap would give; it serves and makes one HTTP request, and a fake OTLP/HTTP collector records what arrives.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { scaled } from '../../libs/testing/src/time-scale';

const ROOT = path.resolve(__dirname, '..', '..');
const INSTRUMENT = path.join(ROOT, 'services', 'gateway', 'src', 'instrument.ts');

interface Received {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: {
    resourceSpans?: Array<{
      resource: { attributes: Array<{ key: string; value: { stringValue?: string } }> };
      scopeSpans: Array<{ spans: Array<{ name: string; kind: number }> }>;
    }>;
  };
}

describe('the OTLP exporter configured by environment only', () => {
  let dir: string;
  let collector: http.Server;
  let endpoint: string;
  let received: Received[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'dam-otel-'));
    // What main.ts does: the instrument module first, then the HTTP server and a call out.
    writeFileSync(
      path.join(dir, 'service.ts'),
      [
        `import { telemetry } from ${JSON.stringify(INSTRUMENT)};`,
        `import http from 'node:http';`,
        `const server = http.createServer((_req, res) => res.end('ok'));`,
        `server.listen(0, '127.0.0.1', () => {`,
        `  const { port } = server.address() as import('node:net').AddressInfo;`,
        `  http.get({ host: '127.0.0.1', port, path: '/api/v1/probe' }, (res) => {`,
        `    res.resume();`,
        `    res.on('end', () => { server.close(); void telemetry.shutdown().then(() => process.exit(0)); });`,
        `  });`,
        `});`,
      ].join('\n'),
    );
    collector = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        received.push({ path: req.url ?? '', headers: req.headers, body: JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Received['body'] });
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve));
    endpoint = `http://127.0.0.1:${(collector.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((resolve) => collector.close(resolve));
    rmSync(dir, { recursive: true, force: true });
  });
  beforeEach(() => {
    received = [];
  });

  const run = async (env: Record<string, string>) => {
    const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('OTEL_')));
    await promisify(execFile)(process.execPath, ['--import', 'tsx', path.join(dir, 'service.ts')], {
      cwd: ROOT,
      env: { ...base, ...env },
      timeout: scaled(60_000),
    });
  };
  const spans = () => received.flatMap((r) => (r.body.resourceSpans ?? []).flatMap((rs) => rs.scopeSpans.flatMap((s) => s.spans)));
  const resource = () => Object.fromEntries((received[0]?.body.resourceSpans?.[0]?.resource.attributes ?? []).map((a) => [a.key, a.value.stringValue]));

  it(
    'sends the HTTP spans to OTEL_EXPORTER_OTLP_ENDPOINT, with the headers and resource attributes of the environment',
    async () => {
      await run({
        OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
        OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer collector-token',
        OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=dev,k8s.namespace.name=dam-dev',
        OTEL_TRACES_SAMPLER: 'parentbased_always_on',
      });
      expect(received.map((r) => r.path)).toContain('/v1/traces');
      expect(received[0]?.headers.authorization).toBe('Bearer collector-token');
      expect(resource()).toMatchObject({ 'service.name': 'gateway', 'deployment.environment': 'dev', 'k8s.namespace.name': 'dam-dev' });
      // The server's span and the client's (SpanKind SERVER = 2, CLIENT = 3).
      expect(
        spans()
          .map((s) => s.kind)
          .sort(),
      ).toEqual([2, 3]);
    },
    scaled(90_000),
  );

  it(
    'samples as OTEL_TRACES_SAMPLER says: a ratio of 0 sends no span',
    async () => {
      await run({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0' });
      expect(spans()).toEqual([]);
    },
    scaled(90_000),
  );

  it(
    'without an endpoint, sends nothing',
    async () => {
      await run({});
      expect(received).toEqual([]);
    },
    scaled(90_000),
  );
});
