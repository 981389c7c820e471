import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { z } from 'zod';
import { assetDataSchema } from '@dam/events';
import { AppError, notFound, validationFailed } from '@dam/errors';
import { mapError } from '@dam/http';
import { toApiKeyView } from '../../auth/src/domain/api-keys';
import { applySettingsPatch, defaultSettings } from '../../auth/src/domain/settings';
import { toUserView } from '../../auth/src/domain/users';
import { toAssetData, type Asset } from '../../metadata/src/domain/asset';
import { defaultSchema, toSchemaView } from '../../metadata/src/domain/asset-schema';
import { toCollectionView } from '../../metadata/src/domain/collection';
import type { Job } from '../../metadata/src/domain/job';
import { toJobView } from '../../metadata/src/domain/job';
import { deref, loadDoc, operationsOf, parametersOf, renames, type Json } from './openapi-zod.compare';
import * as r from './openapi-responses.schemas';
import { ERROR_BODY, REQUESTS, RESPONSES } from './openapi-zod.tables';

/**
 * Every example in docs/openapi.yaml is valid against its own schema (ajv, JSON Schema 2020-12 as OpenAPI 3.1
 * uses it, with formats) and, where the service has a zod schema for it, against that too.
 */

const doc = loadDoc();
const DOC = 'openapi.json';
// Strict: an unknown keyword in a schema (a typo) fails; OpenAPI's own keywords and the document's top level are known.
const ajv = new Ajv2020({ strict: true, strictRequired: false, strictTypes: false, allErrors: true });
addFormats(ajv);
ajv.addVocabulary(['example', 'discriminator', 'xml', 'externalDocs', ...Object.keys(doc)]);
ajv.addSchema(doc, DOC);

const escape = (key: string): string => key.replace(/~/g, '~0').replace(/\//g, '~1');
const compiled = new Map<string, ValidateFunction>();
/** The document's schema at `pointer`, compiled with the document as its root (so `#/components/...` resolves). */
function validatorAt(pointer: string): ValidateFunction {
  let v = compiled.get(pointer);
  if (!v) compiled.set(pointer, (v = ajv.compile({ $ref: `${DOC}#${pointer}` })));
  return v;
}
const errorsOf = (pointer: string, value: unknown): unknown[] => {
  const v = validatorAt(pointer);
  return v(value) ? [] : (v.errors ?? []).map((e) => `${e.instancePath} ${e.message ?? ''}`);
};

interface Example {
  /** Where the example is written. */
  at: string;
  /** The schema it illustrates. */
  schema: string;
  value: unknown;
}

/**
 * Media types, parameters and headers: `example` and `examples.<name>.value` illustrate their `schema`; in a
 * schema, `examples` (an array) and `example` illustrate the schema itself. Example values are not walked.
 */
function examplesIn(node: Json, pointer: string, inProperties = false): Example[] {
  if (Array.isArray(node)) return node.flatMap((n, i) => examplesIn(n, `${pointer}/${i}`));
  if (node === null || typeof node !== 'object') return [];
  const hasSchema = !inProperties && 'schema' in node;
  return Object.entries(node as Record<string, Json>).flatMap(([key, value]): Example[] => {
    const at = `${pointer}/${escape(key)}`;
    if (inProperties) return examplesIn(value, at);
    if (key === 'example') return [{ at, schema: hasSchema ? `${pointer}/schema` : pointer, value }];
    if (key === 'examples' && Array.isArray(value)) return value.map((v, i) => ({ at: `${at}/${i}`, schema: pointer, value: v }));
    if (key === 'examples' && hasSchema) {
      return Object.entries(value as Record<string, Json>).map(([name, ex]) => ({
        at: `${at}/${escape(name)}`,
        schema: `${pointer}/schema`,
        value: deref(doc, ex).value,
      }));
    }
    return examplesIn(value, at, key === 'properties' || key === 'patternProperties' || key === '$defs');
  });
}

const examples = examplesIn(doc, '');
const operations = operationsOf(doc);
const operation = (key: string) => operations.find((o) => o.key === key) as (typeof operations)[number];
const pathOf = (key: string): string => `/paths/${escape(operation(key).path)}/${(key.split(' ')[0] as string).toLowerCase()}`;

/** The examples of one JSON media type: its own, and those of the component its schema names. */
function mediaExamples(media: Json): unknown[] {
  if (!media) return [];
  const own = [
    ...('example' in media ? [media.example] : []),
    ...Object.values((media.examples ?? {}) as Record<string, Json>).map((e) => deref(doc, e).value),
  ];
  const ref = media.schema?.$ref as string | undefined;
  const component = ref ? (deref(doc, media.schema) as Json) : undefined;
  return [...own, ...((component?.examples ?? []) as unknown[])];
}
const requestMedia = (key: string): Json => deref(doc, operation(key).op.requestBody)?.content?.['application/json'];
const responseMedia = (key: string): Json => {
  const [method, path, status] = key.split(' ');
  return deref(doc, operation(`${method} ${path}`).op.responses?.[status as string])?.content?.['application/json'];
};

/** The answers every client reads first: each shows an example. */
const MAIN_RESPONSES = [
  'POST /api/v1/login 200',
  'GET /api/v1/users/me 200',
  'GET /api/v1/users/{user_id} 200',
  'GET /api/v1/users 200',
  'POST /api/v1/api_keys 201',
  'GET /api/v1/api_keys 200',
  'GET /api/v1/settings 200',
  'POST /api/v1/assets/new/content/original/upload 200',
  'POST /api/v1/assets/new/content/original/external 202',
  'GET /api/v1/assets/{asset_id}/data 200',
  'POST /api/v1/assets/{asset_id}/data/update 200',
  'POST /api/v1/assets/{asset_id}/delete 200',
  'POST /api/v1/assets/bulk/delete 200',
  'POST /api/v1/assets/{asset_id}/process 202',
  'GET /api/v1/jobs/{job_id} 200',
  'GET /api/v1/jobs 200',
  'POST /api/v1/collections 201',
  'GET /api/v1/collections/{collection_id} 200',
  'GET /api/v1/schemas/{schema_id} 200',
  'POST /api/v1/assets/search 200',
  'GET /api/v1/assets/{asset_id}/get_link 200',
  'POST /api/v1/assets/get_link 200',
  'GET /api/v1/usage/{metric} 200',
  'GET /api/v1/webhooks/deliveries 200',
];

describe('examples in docs/openapi.yaml', () => {
  it('there are examples: every JSON request body and every main answer shows one', () => {
    expect(examples.length).toBeGreaterThan(60);
    const bodies = operations.filter((o) => requestMedia(o.key)).map((o) => o.key);
    expect(bodies.filter((k) => mediaExamples(requestMedia(k)).length === 0)).toEqual([]);
    expect(MAIN_RESPONSES.filter((k) => mediaExamples(responseMedia(k)).length === 0)).toEqual([]);
    expect(mediaExamples(doc.components.responses.BadRequest.content['application/json']).length).toBeGreaterThan(0);
  });

  it.each(examples.map((e) => [e.at, e] as const))('%s is valid against its schema', (_at, e) => {
    expect(errorsOf(e.schema, e.value)).toEqual([]);
  });

  it.each(Object.entries(REQUESTS).filter(([key, entry]) => entry.schemas.body && requestMedia(key)))(
    "%s: the request examples pass the service's zod schema",
    (key, entry) => {
      const body = entry.schemas.body as z.ZodType;
      for (const value of mediaExamples(requestMedia(key))) expect([value, body.safeParse(value).error?.issues ?? []]).toEqual([value, []]);
    },
  );

  it.each(Object.entries(REQUESTS).filter(([, entry]) => entry.schemas.params || entry.schemas.query))(
    "%s: parameter examples pass the service's zod schema",
    (key, entry) => {
      const names = renames(key, operation(key).path, entry.route);
      const docName = (n: string) => names.get(n) ?? n;
      for (const p of parametersOf(doc, operation(key))) {
        const schema = p.in === 'path' ? entry.schemas.params : p.in === 'query' ? entry.schemas.query : undefined;
        const shape = (schema as z.ZodObject | undefined)?.shape ?? {};
        const member = Object.entries(shape).find(([n]) => docName(n) === p.name)?.[1] as z.ZodType | undefined;
        if (!member) continue;
        // A path or query value arrives as a string: the schema's coercion is part of what is checked.
        for (const value of [p.example, ...Object.values((p.examples ?? {}) as Record<string, Json>).map((e) => deref(doc, e).value)].filter(
          (v) => v !== undefined,
        )) {
          expect([p.name, value, member.safeParse(String(value)).success]).toEqual([p.name, value, true]);
        }
      }
    },
  );

  it.each(Object.entries(RESPONSES).filter(([key]) => mediaExamples(responseMedia(key)).length > 0))(
    '%s: the answer examples pass the zod schema of the answer',
    (key, schema) => {
      for (const value of mediaExamples(responseMedia(key))) expect([value, schema.safeParse(value).error?.issues ?? []]).toEqual([value, []]);
    },
  );

  it("the error examples are the contract's error body", () => {
    const errorExamples = examples.filter(
      (e) => e.schema === '/components/schemas/Error' || e.schema.endsWith('/components/responses/BadRequest/content/application~1json/schema'),
    );
    expect(errorExamples.length).toBeGreaterThan(0);
    for (const e of errorExamples) expect(ERROR_BODY.safeParse(e.value).success).toBe(true);
  });

  it('a wrong example fails (the checks above can fail)', () => {
    const bad = { error: { code: 'not upper', message: 'm' } };
    expect(errorsOf('/components/schemas/Error', bad)).not.toEqual([]);
    expect(ERROR_BODY.safeParse(bad).success).toBe(false);
    expect(errorsOf(`${pathOf('POST /api/v1/assets/{asset_id}/process')}/requestBody/content/application~1json/schema`, { keys: [] })).not.toEqual([]);
    expect(examplesIn({ content: { 'application/json': { schema: { type: 'string' }, example: 7 } } }, '/x')).toEqual([
      { at: '/x/content/application~1json/example', schema: '/x/content/application~1json/schema', value: 7 },
    ]);
  });
});

describe("answers made by the services' own serializers match the document", () => {
  const at = new Date('2026-04-02T09:30:00.000Z');
  const check = (pointer: string, schema: z.ZodType, value: unknown) => {
    expect([pointer, errorsOf(pointer, value)]).toEqual([pointer, []]);
    expect([pointer, schema.safeParse(value).error?.issues ?? []]).toEqual([pointer, []]);
  };

  it('error bodies (CONTRACT §1): validation, not found, ranges and the unexpected', () => {
    for (const error of [
      validationFailed([{ path: 'data.title', message: 'Required' }]),
      notFound('ASSET_NOT_FOUND', 'The asset does not exist'),
      new AppError('RANGE_NOT_SATISFIABLE', 'RANGE_NOT_SATISFIABLE', 'No'),
      new Error('boom'),
    ]) {
      check('/components/schemas/Error', ERROR_BODY, mapError(error).body);
    }
    expect(r.errorDetails.safeParse(mapError(validationFailed([{ path: 'email', message: 'Invalid email address' }])).body.error.details).success).toBe(true);
  });

  it('asset data, job, collection, user, API key, schema and settings records', () => {
    const asset: Asset = {
      id: 'Vx7Q2mK9pL4sT8wZr3nB6yC1dF5gJ0aH',
      groupId: 1,
      creatorId: 7,
      name: 'harbour.jpg',
      size: 482113,
      checksum: '9e107d9d372bb6826bd81d3542a419d6',
      contentType: 'image/jpeg',
      status: 'ERROR',
      metadata: { width: 1600, height: 1067 },
      data: { title: 'Harbour' },
      dataSchemaId: 0,
      conversions: { thumb: { object_key: 'conversions/1/x/thumb.webp', content_type: 'image/webp', width: 200, height: 200, size: 5120, public: false } },
      addonsInfo: { ON_DEMAND_IMAGE: { available: true } },
      addonResults: {},
      errors: { smart_imaging: 'the source could not be decoded' },
      objectKey: 'originals/1/x',
      uploadTime: at,
      updateTime: at,
      deletedAt: null,
      version: 3,
      publicUrls: {},
    };
    check('/components/schemas/AssetData', assetDataSchema, toAssetData(asset));
    const job: Job = {
      id: 41,
      groupId: 1,
      type: 'processing',
      worker: 'conversion',
      params: {},
      attempts: 0,
      status: 'IN_PROGRESS',
      assetIds: [asset.id],
      steps: [{ name: 'conversions', status: 'IN_PROGRESS', started_at: at.toISOString(), finished_at: null }],
      progress: 40,
      error: null,
      skipped: {},
      createdBy: 7,
      createdAt: at,
      updatedAt: at,
    };
    check('/components/schemas/Job', r.jobView, toJobView(job));
    check(
      '/components/schemas/Collection',
      r.collectionView,
      toCollectionView({ id: 'c1', groupId: 1, name: 'Spring', shared: true, basket: false, ownerId: 7, assetCount: 2, createdAt: at }),
    );
    const user = {
      id: 7,
      group_id: 1,
      email: 'maria@example.com',
      password_hash: 'x',
      first_name: 'Maria',
      last_name: 'Lopez',
      role_id: 3,
      disabled: false,
      preferences: {},
      upload_key: 'u',
      access_id: 'a',
      token_epoch: 0,
      created_at: at,
      updated_at: at,
    };
    check('/components/schemas/User', r.userView, toUserView(user));
    check('/components/schemas/ApiKey', r.apiKeyView, toApiKeyView({ id: 'k1', group_id: 1, user_id: 7, name: 'ci', role: 'USER', created_at: at }));
    check('/components/schemas/AssetSchema', r.assetSchemaView, toSchemaView(defaultSchema(1)));
    check('/components/schemas/Settings', r.settings, defaultSettings());
    check(
      '/components/schemas/Settings',
      r.settings,
      applySettingsPatch(defaultSettings(), { webhooks: { urls: ['https://hooks.example.com/dam'], rotate_secret: true } }, at),
    );
  });
});
