import Ajv2020, { type ErrorObject, type ValidateFunction } from 'ajv/dist/2020';
import type { RegExpEngine, RegExpLike } from 'ajv/dist/types';
import { RE2JS } from 're2js';
import { validationFailed, type ErrorDetail } from '@dam/errors';

/** A schema record (CONTRACT §5). */
export interface AssetSchema {
  id: number;
  groupId: number;
  name: string;
  schema: Record<string, unknown> | boolean;
  serviceProperties: Record<string, unknown>;
  createdAt: Date;
  updatedAt: Date;
}

export interface AssetSchemaView {
  schema_id: number;
  name: string;
  schema: Record<string, unknown> | boolean;
  service_properties: Record<string, unknown>;
  created_at: string;
  updated_at: string;
}

export const toSchemaView = (s: AssetSchema): AssetSchemaView => ({
  schema_id: s.id,
  name: s.name,
  schema: s.schema,
  service_properties: s.serviceProperties,
  created_at: s.createdAt.toISOString(),
  updated_at: s.updatedAt.toISOString(),
});

const EPOCH = new Date(0);

/** Schema 0, the same for every group: one searchable text field, anything else allowed. */
export const defaultSchema = (groupId: number): AssetSchema => ({
  id: 0,
  groupId,
  name: 'default',
  schema: {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    type: 'object',
    properties: { service_search_txt: { type: 'string' } },
  },
  serviceProperties: { service_search_txt: { searchable: true, keyword: false } },
  createdAt: EPOCH,
  updatedAt: EPOCH,
});

/**
 * `pattern` and `patternProperties` of a tenant's schema run on metadata's event loop for every tenant: compiled with
 * RE2 (re2js, a linear-time engine) instead of JavaScript's backtracking RegExp, so that no pattern and no value can
 * cost more than linear time (`^(a|a)*$` took 468 ms for 25 characters with RegExp, and doubled per two more). A
 * pattern RE2 cannot run, one that needs backtracking (back-references, look-around), refuses the schema (400 naming
 * the pattern). RE2 reads the pattern as Unicode, as ajv's default `u` flag asks.
 */
const linearRegExp: RegExpEngine = Object.assign(
  (pattern: string): RegExpLike => {
    let compiled: RE2JS;
    try {
      compiled = RE2JS.compile(pattern);
    } catch (error) {
      const why = error instanceof Error ? error.message : String(error);
      throw new Error(
        `pattern ${JSON.stringify(pattern)} is not accepted: only patterns that run in linear time (RE2 syntax: no back-references or look-around) are (${why})`,
      );
    }
    // ajv keeps one compiled pattern per `toString()`: it must name the pattern, or every pattern shares the first.
    const rx: RegExpLike = { test: (value: string) => compiled.test(value) };
    return Object.assign(rx, { toString: () => `re2:${pattern}` });
  },
  // Only for ajv's standalone code, which this service never generates.
  { code: 'require("re2js").RE2JS' },
);

const OPTIONS = { allErrors: true, strict: false, loadSchema: undefined, code: { regExp: linearRegExp } } as const;
// Checks schema documents against the draft 2020-12 meta-schema; never holds a tenant's schema.
const metaValidator = new Ajv2020(OPTIONS);
// Compiled validators, by group, schema id and version. No remote $ref is ever loaded.
const compiled = new Map<string, ValidateFunction>();

/** Compiles a schema document; 400 with why when it is not a valid draft 2020-12 JSON Schema. */
export function compileSchema(schema: unknown, path = 'schema'): ValidateFunction {
  if (typeof schema !== 'boolean' && (typeof schema !== 'object' || schema === null || Array.isArray(schema))) {
    throw validationFailed([{ path, message: 'must be a JSON Schema (an object or a boolean)' }], 'The schema is not a valid JSON Schema');
  }
  const valid = metaValidator.validateSchema(schema as object);
  if (!valid) throw validationFailed(detailsOf(metaValidator.errors ?? [], path), 'The schema is not a valid draft 2020-12 JSON Schema');
  try {
    // An instance of its own for each schema (about 0.5 ms, once per schema version and replica): an ajv instance
    // keeps every schema it compiled, keyed by `$id`, for its life. Shared, it refused a second schema with an
    // `$id` already seen (the same schema read back from the database, or another group's with the same `$id`),
    // resolved one group's `$ref` to another group's schema, and kept every schema ever compiled.
    return new Ajv2020({ ...OPTIONS, validateSchema: false }).compile(schema as object);
  } catch (error) {
    // Unresolvable $ref, unknown format and the like: valid syntax, unusable schema.
    throw validationFailed([{ path, message: error instanceof Error ? error.message : String(error) }], 'The schema cannot be compiled');
  }
}

const detailsOf = (errors: readonly ErrorObject[], prefix: string): ErrorDetail[] =>
  errors.map((e) => ({
    path: [prefix, ...e.instancePath.split('/').filter(Boolean)].join('.'),
    message: `${e.message ?? 'is invalid'}${e.params && Object.keys(e.params).length > 0 ? ` (${JSON.stringify(e.params)})` : ''}`,
  }));

/** Checks custom data against its schema; 400 listing every problem. */
export function validateAgainst(schema: AssetSchema, data: Record<string, unknown>, prefix = 'data'): void {
  const cacheKey = `${schema.groupId}:${schema.id}:${schema.updatedAt.getTime()}`;
  let validate = compiled.get(cacheKey);
  if (!validate) {
    validate = compileSchema(schema.schema);
    if (compiled.size > 1000) compiled.clear();
    compiled.set(cacheKey, validate);
  }
  if (!validate(data)) throw validationFailed(detailsOf(validate.errors ?? [], prefix), 'The data does not match its schema');
}
