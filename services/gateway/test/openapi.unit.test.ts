import { readFileSync } from 'node:fs';
import { validate } from '@readme/openapi-parser';
import { parse } from 'yaml';
import { resolveRoute, ROUTES } from '../src/domain/route-table';
import { loadOpenApiDocument, OPENAPI_YAML_PATH } from '../src/http/openapi.routes';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- walking an arbitrary JSON document
type Json = any;

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;
const doc: Json = parse(readFileSync(OPENAPI_YAML_PATH, 'utf8'));

/**
 * What is implemented today, by public address. Adding a route to a service means adding it here and to
 * docs/openapi.yaml (and taking it out of x-not-yet-implemented).
 */
const IMPLEMENTED: readonly string[] = [
  'base POST /api/v1/login',
  'base GET /api/v1/auth/validate',
  'base POST /api/v1/auth/validate',
  'base GET /api/v1/users/me',
  'base PATCH /api/v1/users/me/preferences',
  'base GET /api/v1/users',
  'base POST /api/v1/users',
  'base GET /api/v1/users/{user_id}',
  'base PATCH /api/v1/users/{user_id}',
  'base DELETE /api/v1/users/{user_id}',
  'base POST /api/v1/groups',
  'base GET /api/v1/api_keys',
  'base POST /api/v1/api_keys',
  'base DELETE /api/v1/api_keys/{key_id}',
  'base GET /api/v1/settings',
  'base PATCH /api/v1/settings',
  'base GET /api/v1/assets/{asset_id}/data',
  'base GET /api/v1/assets/{asset_id}/content/{key}/download',
  'base POST /api/v1/assets/{asset_id}/delete',
  'base POST /api/v1/assets/bulk/delete',
  'base POST /api/v1/assets/trash/{asset_id}/undelete',
  'base DELETE /api/v1/assets/trash/purge',
  'base POST /api/v1/assets/{asset_id}/content/set_public_access',
  'base POST /api/v1/assets/{asset_id}/content/{conversion_name}',
  'base DELETE /api/v1/assets/{asset_id}/content/{conversion_name}',
  'base GET /api/v1/assets/{asset_id}/conversions/{key}',
  'base POST /api/v1/assets/{asset_id}/data/update',
  'base POST /api/v1/assets/{asset_id}/process',
  'base GET /api/v1/assets/{asset_id}/similar',
  'base GET /api/v1/assets/{asset_id}/content/{key}/{file_path}',
  'base GET /api/v1/schemas',
  'base POST /api/v1/schemas',
  'base GET /api/v1/schemas/{schema_id}',
  'base PUT /api/v1/schemas/{schema_id}',
  'base GET /api/v1/jobs',
  'base GET /api/v1/jobs/{job_id}',
  'base GET /api/v1/jobs/{job_id}/export',
  'base GET /api/v1/openapi.json',
  'base GET /api/v1/openapi.yaml',
  'base GET /api/v1/assets/{asset_id}/get_link',
  'base POST /api/v1/assets/get_link',
  'base POST /api/v1/users/me/access_id',
  'base POST /api/v1/users/me/uploadkey',
  'base POST /api/v1/users/{user_id}/access_id',
  'base POST /api/v1/assets/search',
  'base GET /api/v1/assets/search/{search_result_id}/{page}',
  'base POST /api/v1/search',
  'base GET /api/v1/search/{search_id}/{page}',
  'base GET /api/v1/collections',
  'base POST /api/v1/collections',
  'base GET /api/v1/collections/{collection_id}',
  'base PATCH /api/v1/collections/{collection_id}',
  'base DELETE /api/v1/collections/{collection_id}',
  'base POST /api/v1/collections/{collection_id}/assets',
  'base DELETE /api/v1/collections/{collection_id}/assets',
  'base GET /api/v1/usage/{metric}',
  'base POST /api/v1/assets/{asset_id}/addons/{addon}',
  'base GET /api/v1/assets/{asset_id}/addons/{addon}',
  'base POST /api/v1/callbacks/reissue',
  'base GET /api/v1/webhooks/deliveries',
  'base POST /api/v1/cdn/prefetch',
  'base POST /api/v1/cdn/purge',
  'cdn GET /api/v1/files/content/{asset_id}',
  'cdn GET /api/v1/files/content/{asset_id}/{file_path}',
  'upload POST /api/v1/assets/new/content/original/upload',
  'upload OPTIONS /api/v1/uploads/tus',
  'upload POST /api/v1/uploads/tus',
  'upload OPTIONS /api/v1/uploads/tus/{upload_id}',
  'upload HEAD /api/v1/uploads/tus/{upload_id}',
  'upload PATCH /api/v1/uploads/tus/{upload_id}',
  'upload DELETE /api/v1/uploads/tus/{upload_id}',
  'upload POST /api/v1/assets/new/content/original/external',
  'upload POST /api/v1/assets/{asset_id}/content/original/replace',
  ...['base', 'upload', 'cdn'].flatMap((s) => [`${s} GET /healthz`, `${s} GET /readyz`]),
];
/** Answered by the gateway itself, not through the route table. */
const GATEWAY_OWN = new Set(['/api/v1/openapi.json', '/api/v1/openapi.yaml']);
const PUBLIC = new Set(['POST /api/v1/login', 'GET /api/v1/auth/validate', 'POST /api/v1/auth/validate']);

/** `{upload}` → `upload`; a path without its own servers is on `{base}`. */
const serversOf = (pathItem: Json): string[] => ((pathItem.servers ?? doc.servers) as Json[]).map((s) => String(s.url).replace(/[{}]/g, ''));

interface Operation {
  server: string;
  method: string;
  path: string;
  op: Json;
}

const operations: Operation[] = Object.entries(doc.paths as Record<string, Json>).flatMap(([path, item]) =>
  METHODS.filter((m) => item[m]).flatMap((m) => serversOf(item).map((server) => ({ server, method: m.toUpperCase(), path, op: item[m] }))),
);

const SAMPLE: Record<string, string> = { asset_id: 'a'.repeat(32), key: 'original', user_id: '7', key_id: 'k1' };
const concrete = (path: string): string => path.replace(/\{(\w+)\}/g, (_m, name: string) => SAMPLE[name] ?? 'x');

/** Every `$ref` in the document, with where it sits. */
function refs(node: Json, at = '#'): Array<[string, string]> {
  if (Array.isArray(node)) return node.flatMap((n, i) => refs(n, `${at}/${i}`));
  if (node === null || typeof node !== 'object') return [];
  return Object.entries(node).flatMap(([k, v]) => (k === '$ref' ? [[at, String(v)] as [string, string]] : refs(v, `${at}/${k}`)));
}
const resolvePointer = (ref: string): unknown =>
  ref
    .replace(/^#\//, '')
    .split('/')
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce<Json>((node, key) => (node === undefined ? undefined : node[key]), doc);

describe('docs/openapi.yaml', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    expect(String(doc.openapi)).toMatch(/^3\.1\.\d+$/);
    const result = await validate(structuredClone(doc));
    expect(result).toMatchObject({ valid: true });
  });

  it('the validator does reject a broken copy (so the test above can fail)', async () => {
    const broken = structuredClone(doc);
    delete broken.paths['/api/v1/login'].post.responses;
    broken.paths['/api/v1/users'].get.responses['200'].content['application/json'].schema = { $ref: '#/components/schemas/Nope' };
    const result = await validate(broken);
    expect(result.valid).toBe(false);
  });

  it('every $ref resolves inside the document', () => {
    const all = refs(doc);
    expect(all.length).toBeGreaterThan(50);
    const dangling = all.filter(([, ref]) => !ref.startsWith('#/') || resolvePointer(ref) === undefined);
    expect(dangling).toEqual([]);
  });

  it('describes exactly the implemented endpoints', () => {
    const documented = operations.map((o) => `${o.server} ${o.method} ${o.path}`).sort();
    expect(documented).toEqual([...IMPLEMENTED].sort());
  });

  it('every operation has responses; credentialed ones document 401, gateway ones 429 and 503', () => {
    for (const { server, method, path, op } of operations) {
      const where = `${server} ${method} ${path}`;
      expect([where, Object.keys(op.responses ?? {}).length > 0]).toEqual([where, true]);
      const needsCredentials = op.security === undefined || (op.security as Json[]).length > 0;
      if (needsCredentials) expect([where, op.responses['401']]).toEqual([where, expect.anything()]);
      if (server === 'base' && path.startsWith('/api/') && !GATEWAY_OWN.has(path)) {
        expect([where, op.responses['429'], op.responses['503']]).toEqual([where, expect.anything(), expect.anything()]);
      }
    }
  });

  it('the gateway routes every documented {base} operation, public exactly where the document says so', () => {
    const base = operations.filter((o) => o.server === 'base' && o.path.startsWith('/api/') && !GATEWAY_OWN.has(o.path));
    expect(base.length).toBeGreaterThan(15);
    for (const { method, path } of base) {
      const match = resolveRoute(method, concrete(path));
      expect([method, path, match?.rule.public ?? false]).toEqual([method, path, PUBLIC.has(`${method} ${path}`)]);
      expect(match).toBeDefined();
    }
  });

  it("documents every route of the gateway's table, route for route (the catch-all of unknown asset paths aside)", () => {
    const base = operations.filter((o) => o.server === 'base');
    const templateMatches = (template: string, path: string): boolean =>
      new RegExp(
        `^${template
          .replace(/[.*+?^$()|[\]\\]/g, '\\$&')
          .replace('{file_path}', '.+')
          .replace(/\{\w+\}/g, '[^/]+')}$`,
      ).test(path);
    const rules = ROUTES.filter((r) => r.pattern !== '/api/v1/assets/**');
    expect(rules.length).toBeGreaterThan(40);
    for (const rule of rules) {
      const path = rule.pattern.replace(/:\w+/g, 'x1').replace('**', 'image_files/0/0_0.jpeg');
      for (const method of rule.methods.filter((m) => m !== 'HEAD')) {
        const documented = base.some((o) => o.method === method && templateMatches(o.path, path));
        expect([method, rule.pattern, documented]).toEqual([method, rule.pattern, true]);
      }
    }
  });

  it('lists the endpoints not built yet apart from the described ones', () => {
    const pending = doc['x-not-yet-implemented'] as Array<{ method: string; path: string; server: string }>;
    expect(Array.isArray(pending)).toBe(true);
    const documented = new Set(operations.map((o) => `${o.method} ${o.path}`));
    for (const p of pending) {
      expect(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']).toContain(p.method);
      expect(['base', 'upload', 'cdn']).toContain(p.server);
      expect(documented.has(`${p.method} ${p.path}`)).toBe(false);
    }
  });

  it('the gateway serves the JSON form of the same document', () => {
    const loaded = loadOpenApiDocument();
    expect(JSON.parse(loaded.json)).toEqual(doc);
    expect(loaded.yaml).toBe(readFileSync(OPENAPI_YAML_PATH, 'utf8'));
  });
});
