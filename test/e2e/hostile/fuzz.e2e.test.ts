/* eslint-disable @typescript-eslint/no-explicit-any -- the document and the answers are untyped JSON walked generically */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import fc from 'fast-check';
import sharp from 'sharp';
import { parse } from 'yaml';
import { repoRoot, scaled, waitFor } from '@dam/testing';
import { useSuite } from '../suite';

/**
 * Issue 14: a fuzzer driven by docs/openapi.yaml. Every documented operation of {base} and {upload} gets requests
 * generated with fast-check (seeded, so a failure replays): path parameters from the suite's real resources or
 * hostile strings, documented and unknown query parameters with valid and invalid values, JSON bodies made from
 * the document's own examples and mutated (members dropped, replaced by any JSON, wrong types), non-JSON bodies,
 * missing or broken credentials. No answer may be a 5xx, every error answer must carry the contract's body, and
 * every 2xx JSON answer must match the schema the document gives it (ajv 2020).
 */
const REQUESTS = Number(process.env.FUZZ_REQUESTS ?? 10_000);
const SEED = Number(process.env.FUZZ_SEED ?? 20261123);
/** Requests of one operation in flight at once. */
const PARALLEL = Number(process.env.FUZZ_PARALLEL ?? 4);

const e2e = useSuite({
  gateway: { RATE_LIMIT_PER_MINUTE: '0', RATE_LIMIT_ADDRESS_PER_MINUTE: '0', AUTH_FAILURES_PER_MINUTE: '0' },
  upload: { RATE_LIMIT_PER_MINUTE: '0', RATE_LIMIT_ADDRESS_PER_MINUTE: '0', AUTH_FAILURES_PER_MINUTE: '0' },
});
const doc: any = parse(readFileSync(path.join(repoRoot, 'docs/openapi.yaml'), 'utf8'));
const fixtures: Record<string, string> = {};

const deref = (node: any): any => {
  let n = node;
  for (let i = 0; n && typeof n.$ref === 'string' && i < 10; i += 1)
    n = n.$ref
      .slice(2)
      .split('/')
      .reduce((o: any, k: string) => o?.[k.replace(/~1/g, '/').replace(/~0/g, '~')], doc);
  return n;
};

beforeAll(async () => {
  const auth = { authorization: `Bearer ${e2e.jwt}` };
  const form = new FormData();
  form.append(
    'file',
    new Blob([
      await sharp({ create: { width: 64, height: 48, channels: 3, background: '#468' } })
        .png()
        .toBuffer(),
    ]),
    'fuzz.png',
  );
  const up = (await (
    await fetch(`${e2e.suite.upload}/api/v1/assets/new/content/original/upload`, { method: 'POST', headers: auth, body: form })
  ).json()) as any;
  fixtures.asset_id = up.files[0].id;
  await waitFor(async () => (await e2e.api.call('GET', `/api/v1/assets/${fixtures.asset_id}/data`)).body?.status === 'OK', { description: 'fixture asset OK' });
  fixtures.collection_id = String((await e2e.api.call('POST', '/api/v1/collections', { name: 'fuzz' })).body.collection_id);
  fixtures.schema_id = String((await e2e.api.call('POST', '/api/v1/schemas', { name: 'fuzz', schema: { type: 'object' } })).body.schema_id);
  fixtures.job_id = String((await e2e.api.call('GET', '/api/v1/jobs')).body.items[0].job_id);
  // Path parameters name a user made for the purpose, never the ADMIN the fuzzer acts as.
  const victim = await e2e.api.call('POST', '/api/v1/users', {
    email: 'victim@example.com',
    password: 'password-123',
    first_name: 'V',
    last_name: 'V',
    role_id: 3,
  });
  fixtures.user_id = String(victim.body.user_id);
  fixtures.key_id = (await e2e.api.call('POST', '/api/v1/api_keys', { name: 'fuzz', role: 'USER' })).body.key_id;
  Object.assign(fixtures, { key: 'original', conversion_name: 'thumb', addon: 'auto_tagging', metric: 'api_requests', file_path: 'x.dzi', page: '1' });
});

const HOSTILE = [
  '',
  ' ',
  '0',
  '-1',
  '1.5',
  '99999999999999999999',
  '..',
  '%2e%2e',
  '%00',
  '%zz',
  'null',
  'undefined',
  '[]',
  '{}',
  '<script>alert(1)</script>',
  "' OR 1=1 --",
  'a'.repeat(3000),
  '🙂漢é',
  'trash',
  'me',
  'SELECTED_ASSETS',
];
const scalar = fc.oneof(
  fc.constantFrom(...HOSTILE),
  fc.string({ maxLength: 40 }),
  fc.integer().map(String),
  fc.constantFrom('true', 'false', 'MAX', 'display', 'download'),
);

interface Op {
  method: string;
  server: 'base' | 'upload';
  template: string;
  pathParams: string[];
  query: Array<{ name: string; schema: any }>;
  json?: any;
  multipart: boolean;
  /** The documented JSON schema of each 2xx answer. */
  answers: Record<string, any>;
}

/** Answers are checked against the document's own schemas (components resolved through the whole document). */
const ajv = new Ajv2020({ strict: false, allErrors: false, validateFormats: true });
addFormats(ajv);
ajv.addSchema({ ...doc, $id: 'openapi' }, 'openapi');
const validators = new Map<any, ReturnType<typeof ajv.compile>>();
function validatorOf(schema: any) {
  let v = validators.get(schema);
  if (!v) {
    v = ajv.compile({ $ref: '#/$defs/answer', $defs: { answer: JSON.parse(JSON.stringify(schema).replace(/"#\/components\//g, '"openapi#/components/')) } });
    validators.set(schema, v);
  }
  return v;
}

function operations(): Op[] {
  const ops: Op[] = [];
  for (const [template, item] of Object.entries<any>(doc.paths)) {
    const server = String(item.servers?.[0]?.url ?? '{base}').includes('upload')
      ? 'upload'
      : String(item.servers?.[0]?.url ?? '{base}').includes('cdn')
        ? undefined
        : 'base';
    if (!server || template.startsWith('/api/v1/uploads/tus')) continue; // the edge has its own signed-link tests; tus its own
    for (const method of ['get', 'post', 'put', 'patch', 'delete']) {
      const op = item[method];
      if (!op) continue;
      const params = [...(item.parameters ?? []), ...(op.parameters ?? [])].map(deref);
      const content = deref(op.requestBody)?.content ?? {};
      const jsonMedia = content['application/json'];
      const example = jsonMedia?.example ?? Object.values<any>(jsonMedia?.examples ?? {})[0]?.value ?? deref(jsonMedia?.schema)?.examples?.[0] ?? {};
      ops.push({
        method: method.toUpperCase(),
        server,
        template,
        pathParams: params.filter((p) => p.in === 'path').map((p) => p.name),
        query: params.filter((p) => p.in === 'query').map((p) => ({ name: p.name, schema: deref(p.schema) ?? {} })),
        ...(jsonMedia ? { json: example } : {}),
        multipart: Boolean(content['multipart/form-data']),
        answers: Object.fromEntries(
          Object.entries<any>(op.responses ?? {})
            .filter(([code]) => code.startsWith('2'))
            .map(([code, r]) => [code, deref(r)?.content?.['application/json']?.schema])
            .filter(([, schema]) => schema),
        ),
      });
    }
  }
  return ops;
}

/** A JSON body: the example as it is, without a member, with a member replaced by anything, or anything at all. */
const bodyOf = (example: any) =>
  fc.oneof(
    fc.constant(example),
    fc.jsonValue({ maxDepth: 3 }),
    ...(example && typeof example === 'object' && !Array.isArray(example) && Object.keys(example).length > 0
      ? [
          fc.constantFrom(...Object.keys(example)).map((k) => Object.fromEntries(Object.entries(example).filter(([key]) => key !== k))),
          fc.tuple(fc.constantFrom(...Object.keys(example)), fc.jsonValue({ maxDepth: 2 })).map(([k, v]) => ({ ...example, [k]: v })),
          fc
            .tuple(fc.constantFrom(...Object.keys(example)), fc.constantFrom<unknown>(null, -1, 1e308, '', 'x'.repeat(20_000), [], {}, true))
            .map(([k, v]) => ({ ...example, [k]: v })),
        ]
      : []),
  );

const queryValue = (schema: any) =>
  fc.oneof(scalar, ...(Array.isArray(schema.enum) ? [fc.constantFrom(...schema.enum.map(String))] : []), fc.integer({ min: 1, max: 200 }).map(String));

function requestOf(op: Op) {
  const pathArb = fc.tuple(...op.pathParams.map((p) => fc.oneof({ weight: 2, arbitrary: fc.constant(fixtures[p] ?? 'x') }, { weight: 1, arbitrary: scalar })));
  const queryArb = fc.tuple(
    ...op.query.map((q) => fc.option(queryValue(q.schema), { nil: undefined, freq: 3 })),
    fc.option(fc.tuple(fc.constantFrom('unknown', 'w', 'page', '__proto__'), scalar), { nil: undefined, freq: 2 }),
  );
  const bodyArb =
    op.json !== undefined
      ? fc.oneof(
          { weight: 8, arbitrary: bodyOf(op.json).map((b) => ({ type: 'application/json', body: JSON.stringify(b) })) },
          { weight: 1, arbitrary: fc.constantFrom('{"a":', 'not json', '').map((b) => ({ type: 'application/json', body: b })) },
        )
      : op.multipart
        ? fc.constantFrom(
            { type: 'multipart/form-data; boundary=x', body: '--x\r\nContent-Disposition: form-data; name="file"; filename="a"\r\n\r\nabc\r\n--x--' },
            { type: 'multipart/form-data; boundary=x', body: 'garbage' },
            { type: 'text/plain', body: 'x' },
          )
        : fc.constant(undefined);
  const credArb = fc.oneof(
    { weight: 18, arbitrary: fc.constant('admin') },
    { weight: 1, arbitrary: fc.constant('none') },
    { weight: 1, arbitrary: fc.constant('garbage') },
  );
  return fc.record({ path: pathArb, query: queryArb, body: bodyArb, cred: credArb });
}

function urlOf(op: Op, pathValues: string[], query: unknown[]): string {
  let i = 0;
  const filled = op.template.replace(/\{[^}]+\}/g, () => {
    const v = pathValues[i++] ?? 'x';
    // Mostly encoded; a malformed escape goes as it is.
    return /^%[0-9a-z]{0,2}$/i.test(v) ? v : encodeURIComponent(v);
  });
  const params = new URLSearchParams();
  op.query.forEach((q, j) => {
    const v = query[j];
    if (typeof v === 'string') params.append(q.name, v);
  });
  const extra = query[op.query.length] as [string, string] | undefined;
  if (extra) params.append(extra[0], extra[1]);
  const qs = params.toString();
  return `${op.server === 'upload' ? e2e.suite.upload : e2e.suite.base}${filled}${qs ? `?${qs}` : ''}`;
}

it(`answers ${REQUESTS} generated requests across every documented operation with no 5xx and the contract's error body`, async () => {
  const ops = operations();
  expect(ops.length).toBeGreaterThan(60);
  const perOp = Math.ceil(REQUESTS / ops.length);
  const failures: string[] = [];
  let sent = 0;
  let statuses = new Map<number, number>();
  for (const [n, op] of ops.entries()) {
    const samples = fc.sample(requestOf(op), { numRuns: perOp, seed: SEED + n });
    // The samples of one operation go PARALLEL at a time (operations stay one after the other, in order): the same
    // requests as one by one, in a third of the time.
    let next = 0;
    const lane = async (): Promise<void> => {
      for (let s = samples[next++]; s !== undefined; s = samples[next++]) await check(s);
    };
    const check = async (s: (typeof samples)[number]): Promise<void> => {
      const url = urlOf(op, s.path as string[], s.query as unknown[]);
      const headers: Record<string, string> =
        s.cred === 'admin' ? { authorization: `Bearer ${e2e.jwt}` } : s.cred === 'garbage' ? { authorization: 'Bearer x.y.z' } : {};
      if (s.body) headers['content-type'] = s.body.type;
      let status = 0;
      let text = '';
      let contentType = '';
      try {
        const res = await fetch(url, { method: op.method, headers, ...(s.body ? { body: s.body.body } : {}), signal: AbortSignal.timeout(scaled(15_000)) });
        status = res.status;
        contentType = res.headers.get('content-type') ?? '';
        text = status >= 400 || (op.answers[String(status)] && contentType.includes('json')) ? await res.text() : (await res.body?.cancel(), '');
      } catch (error) {
        failures.push(`${op.method} ${url.slice(0, 200)}: no answer (${String(error)})`);
        return;
      }
      sent += 1;
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
      const documented = op.answers[String(status)];
      // An empty path parameter makes the URL another route's (`/users/` is `/users`): its answer is not this one's.
      if (status < 300 && documented && contentType.includes('json') && !(s.path as string[]).includes('')) {
        const validate = validatorOf(documented);
        if (!validate(JSON.parse(text)))
          failures.push(`${op.method} ${url.slice(0, 200)} → ${status} not as documented: ${ajv.errorsText(validate.errors).slice(0, 300)}`);
      }
      if (status >= 500) failures.push(`${op.method} ${url.slice(0, 200)} ${s.body?.body.slice(0, 200) ?? ''} → ${status} ${text.slice(0, 300)}`);
      else if (status >= 400) {
        let body: any;
        try {
          body = JSON.parse(text);
        } catch {
          body = undefined;
        }
        if (!contentType.includes('json') || typeof body?.error?.code !== 'string' || typeof body.error.message !== 'string') {
          failures.push(`${op.method} ${url.slice(0, 200)} → ${status} without the contract's body: ${text.slice(0, 200)}`);
        }
      }
    };
    await Promise.all(Array.from({ length: PARALLEL }, lane));
  }
  statuses = new Map([...statuses.entries()].sort((a, b) => a[0] - b[0]));
  // What the run covered, for the log of the test command.
  console.log(`fuzz: ${sent} requests over ${ops.length} operations, seed ${SEED}; statuses ${JSON.stringify(Object.fromEntries(statuses))}`);
  expect(failures.slice(0, 40)).toEqual([]);
  expect(sent).toBeGreaterThanOrEqual(REQUESTS * 0.99);
  // Every service is still up.
  for (const [name, service] of Object.entries(e2e.suite.services)) expect([name, (await fetch(`${service.url}/readyz`)).status]).toEqual([name, 200]);
});
