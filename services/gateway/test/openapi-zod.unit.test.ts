import type { z } from 'zod';
import { parseUpdateData } from '../../metadata/src/use-cases/update-data.use-case';
import {
  compareSchemas,
  deref,
  loadDoc,
  operationsOf,
  parametersOf,
  renames,
  zodInput,
  zodOutput,
  type Json,
  type Operation,
  type Problem,
} from './openapi-zod.compare';
import { ERROR_BODY, NO_RESPONSE_SCHEMA, NO_ZOD, PENDING_EXPORT, REQUESTS, RESPONSES, type RouteEntry } from './openapi-zod.tables';

/**
 * docs/openapi.yaml against the zod schemas the services validate requests with (REQUESTS) and the schemas of
 * their answers (RESPONSES): names, required sets, types, enums, formats, patterns, bounds and defaults.
 */

const doc = loadDoc();

/** Differences kept on purpose: `<where> <what>` → why. Every entry must still be needed. */
const ACCEPTED: Record<string, string> = {
  // Names the route takes as any 1-64 characters and answers 404 when unknown (documented): the enum tells
  // clients which exist.
  'POST /api/v1/assets/{asset_id}/addons/{addon} path.addon enum': 'unknown addons answer 404 ADDON_NOT_FOUND',
  'GET /api/v1/assets/{asset_id}/addons/{addon} path.addon enum': 'unknown addons answer 404 ADDON_NOT_FOUND',
  'GET /api/v1/usage/{metric} path.metric enum': 'unknown metrics answer 404 METRIC_NOT_FOUND',
  // Rules zod checks with a refinement, which its JSON Schema cannot carry.
  'PATCH /api/v1/collections/{collection_id} body minProperties': 'refine: name or shared is required',
  'PATCH /api/v1/users/{user_id} body minProperties': 'refine: one of role_id, disabled, password is required',
  'PATCH /api/v1/settings body.conversions.custom maxProperties': 'refine: at most 50 custom conversions',
  'PATCH /api/v1/settings body.webhooks.urls[] format': 'refine: URL.canParse and an http(s) scheme',
  // zod takes a string or any number; resolveExpiry then passes only 1-12 digits or MAX (400 otherwise): the
  // document states what gets through, and a query parameter is a string anyway.
  'GET /api/v1/assets/{asset_id}/get_link query.expiry type': 'a query parameter arrives as a string',
  'POST /api/v1/assets/get_link body.expiry type': 'resolveExpiry refuses numbers that are not whole seconds',
  // The transform fills them in when absent (conversion's transform.use-case: fit ?? 'inside', q ?? 80).
  'GET /api/v1/assets/{asset_id}/conversions/{key} query.fit default': 'applied by the conversion service',
  'GET /api/v1/assets/{asset_id}/conversions/{key} query.q default': 'applied by the conversion service',
};

const operations = operationsOf(doc);
const operation = (key: string): Operation => {
  const found = operations.find((o) => o.key === key);
  if (!found) throw new Error(`${key} is not in docs/openapi.yaml`);
  return found;
};

/** Query parameters that are credentials (the `_jwt` scheme), not input. */
const securityQuery = new Set(
  Object.values(doc.components.securitySchemes as Record<string, Json>)
    .filter((s) => s.in === 'query')
    .map((s) => s.name as string),
);

const format = (p: Problem): string => `${p.at} ${p.what}: document ${JSON.stringify(p.doc)}, service ${JSON.stringify(p.service)}`;
const unexplained = (problems: Problem[]): string[] => problems.filter((p) => !(`${p.at} ${p.what}` in ACCEPTED)).map(format);

function requestProblems(key: string, entry: RouteEntry): Problem[] {
  const o = operation(key);
  const problems: Problem[] = [];
  const names = renames(key, o.path, entry.route, problems);
  const parameters = parametersOf(doc, o);
  for (const place of ['path', 'query'] as const) {
    const schema = entry.schemas[place === 'path' ? 'params' : 'query'];
    const zod: Json = schema ? zodInput(schema) : { properties: {}, required: [] };
    const serviceNames = new Map(Object.keys(zod.properties ?? {}).map((n) => [names.get(n) ?? n, n]));
    const documented = parameters.filter((p) => p.in === place && !securityQuery.has(p.name));
    const at = `${key} ${place}`;
    const docNames = documented.map((p) => p.name as string).sort();
    if (JSON.stringify(docNames) !== JSON.stringify([...serviceNames.keys()].sort()))
      problems.push({ at, what: 'parameters', doc: docNames, service: [...serviceNames.keys()].sort() });
    for (const p of documented) {
      const serviceName = serviceNames.get(p.name);
      if (serviceName === undefined) continue;
      const required = ((zod.required ?? []) as string[]).includes(serviceName);
      if ((p.required === true) !== required) problems.push({ at: `${at}.${p.name}`, what: 'required', doc: p.required === true, service: required });
      problems.push(...compareSchemas(doc, p.schema, zod, zod.properties[serviceName], `${at}.${p.name}`, 'request'));
    }
  }
  const requestBody = deref(doc, o.op.requestBody);
  const json = requestBody?.content?.['application/json'];
  const body = entry.schemas.body;
  if (!body) {
    if (json) problems.push({ at: `${key} body`, what: 'requestBody', doc: 'application/json', service: 'no body schema' });
    return problems;
  }
  if (!json) {
    problems.push({ at: `${key} body`, what: 'requestBody', doc: Object.keys(requestBody?.content ?? {}), service: 'application/json' });
    return problems;
  }
  const optional = body.safeParse(undefined).success;
  if ((requestBody.required === true) === optional)
    problems.push({ at: `${key} body`, what: 'required', doc: requestBody.required === true, service: !optional });
  const zod = zodInput(body);
  problems.push(...compareSchemas(doc, json.schema, zod, zod, `${key} body`, 'request'));
  return problems;
}

const responseOf = (key: string): Json => {
  const [method, path, status] = key.split(' ');
  return deref(doc, operation(`${method} ${path}`).op.responses?.[status as string]);
};

function responseProblems(key: string, schema: z.ZodType): Problem[] {
  const json = responseOf(key)?.content?.['application/json'];
  if (!json) return [{ at: key, what: 'response', doc: 'no application/json answer', service: 'a JSON answer' }];
  const zod = zodOutput(schema);
  return compareSchemas(doc, json.schema, zod, zod, key, 'response');
}

function errorBodyProblems(): Problem[] {
  const zod = zodOutput(ERROR_BODY);
  return compareSchemas(doc, { $ref: '#/components/schemas/Error' }, zod, zod, 'Error', 'response');
}

describe('docs/openapi.yaml agrees with the zod schemas of the services', () => {
  it('accounts for every documented operation: zod-checked, waiting for an export, or validating nothing with zod', () => {
    const lists = [Object.keys(REQUESTS), Object.keys(PENDING_EXPORT), Object.keys(NO_ZOD)];
    const listed = lists.flat();
    expect(listed.filter((k, i) => listed.indexOf(k) !== i)).toEqual([]);
    expect(operations.map((o) => o.key).sort()).toEqual([...listed].sort());
  });

  it('every JSON request body is zod-checked or explicitly exempt', () => {
    const withJsonBody = operations.filter((o) => deref(doc, o.op.requestBody)?.content?.['application/json']).map((o) => o.key);
    expect(withJsonBody.length).toBeGreaterThan(25);
    const unchecked = withJsonBody.filter((k) => !REQUESTS[k]?.schemas.body && !(k in PENDING_EXPORT) && !(k in NO_ZOD));
    expect(unchecked).toEqual([]);
  });

  it.each(Object.entries(REQUESTS))('%s: parameters and body as the service validates them', (key, entry) => {
    expect(unexplained(requestProblems(key, entry))).toEqual([]);
  });

  it('Update Data: the body is customMetadataSchema with `mode` required, as the table says', () => {
    expect(() => parseUpdateData({ data: { title: 'x' } })).toThrow();
    expect(parseUpdateData({ data: { title: 'x' }, mode: 'APPEND' })).toEqual({ data: { title: 'x' }, mode: 'APPEND' });
  });

  it.each(Object.entries(RESPONSES))('%s: the answer as the service makes it', (key, schema) => {
    expect(unexplained(responseProblems(key, schema))).toEqual([]);
  });

  it('every 2xx JSON answer has a schema to check, or a reason', () => {
    const answers = operations.flatMap((o) =>
      Object.entries((o.op.responses ?? {}) as Record<string, Json>)
        .filter(([status, r]) => status.startsWith('2') && deref(doc, r)?.content?.['application/json'])
        .map(([status]) => `${o.key} ${status}`),
    );
    expect(answers.filter((k) => !(k in RESPONSES) && !(k in NO_RESPONSE_SCHEMA))).toEqual([]);
    expect([...Object.keys(RESPONSES), ...Object.keys(NO_RESPONSE_SCHEMA)].filter((k) => !answers.includes(k))).toEqual([]);
  });

  it('the error body (CONTRACT §1) is ErrorBody, and every JSON error answer is it', () => {
    expect(unexplained(errorBodyProblems())).toEqual([]);
    const notError = operations.flatMap((o) =>
      Object.entries((o.op.responses ?? {}) as Record<string, Json>)
        .filter(([status]) => !status.startsWith('2'))
        .filter(([, r]) => {
          const json = deref(doc, r)?.content?.['application/json'];
          return json && json.schema?.$ref !== '#/components/schemas/Error';
        })
        .map(([status]) => `${o.key} ${status}`),
    );
    // /readyz answers its checks with 503, not an error body.
    expect(notError).toEqual(['GET /readyz 503']);
  });

  it('keeps no accepted difference that is not needed any more', () => {
    const found = new Set(
      [
        ...Object.entries(REQUESTS).flatMap(([k, e]) => requestProblems(k, e)),
        ...Object.entries(RESPONSES).flatMap(([k, s]) => responseProblems(k, s)),
        ...errorBodyProblems(),
      ].map((p) => `${p.at} ${p.what}`),
    );
    expect(Object.keys(ACCEPTED).filter((k) => !found.has(k))).toEqual([]);
  });
});

describe('the comparison itself', () => {
  const broken = (edit: (d: Json) => void): Json => {
    const copy = structuredClone(doc);
    edit(copy);
    return copy;
  };
  const problemsIn = (d: Json, key: string, schema: z.ZodType, direction: 'request' | 'response') => {
    const zod = direction === 'request' ? zodInput(schema) : zodOutput(schema);
    const o = d.paths[key.split(' ')[1] as string][(key.split(' ')[0] as string).toLowerCase()];
    const node =
      direction === 'request' ? o.requestBody.content['application/json'].schema : o.responses[key.split(' ')[2] as string].content['application/json'].schema;
    return compareSchemas(d, node, zod, zod, key, direction).map((p) => `${p.at} ${p.what}`);
  };

  it('finds a renamed property, a dropped required member, a changed bound and a missing enum value', () => {
    const key = 'POST /api/v1/collections';
    const body = REQUESTS[key]?.schemas.body as z.ZodType;
    expect(problemsIn(doc, key, body, 'request')).toEqual([]);
    const d = broken((c) => {
      const s = c.paths['/api/v1/collections'].post.requestBody.content['application/json'].schema;
      s.properties.title = s.properties.name;
      delete s.properties.name;
      s.required = [];
      s.properties.title.maxLength = 100;
    });
    expect(problemsIn(d, key, body, 'request')).toEqual([`${key} properties`, `${key} required`]);
    const jobs = broken((c) => {
      c.components.schemas.Job.properties.type.enum.pop();
      c.components.schemas.Job.properties.progress.maximum = 99;
    });
    expect(problemsIn(jobs, 'GET /api/v1/jobs/{job_id} 200', RESPONSES['GET /api/v1/jobs/{job_id} 200'] as z.ZodType, 'response')).toEqual([
      'GET /api/v1/jobs/{job_id} 200.type enum',
      'GET /api/v1/jobs/{job_id} 200.progress maximum',
    ]);
  });
});
