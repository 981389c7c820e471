/**
 * The draft 2020-12 meta-schema check of lib/schema-check.ts, a chunk of its own: @cfworker/json-schema (it
 * interprets the schema, where ajv would generate code that the console's CSP forbids) and the meta-schema files ajv
 * ships, the ones metadata validates against. About 8 kB gzipped that only the Schemas page's editor needs, so it is
 * loaded by loadSchemaCheck() when that page opens, not with the console.
 */
import { Validator, type OutputUnit, type Schema } from '@cfworker/json-schema';
import metaSchema from 'ajv/dist/refs/json-schema-2020-12/schema.json';
import metaApplicator from 'ajv/dist/refs/json-schema-2020-12/meta/applicator.json';
import metaContent from 'ajv/dist/refs/json-schema-2020-12/meta/content.json';
import metaCore from 'ajv/dist/refs/json-schema-2020-12/meta/core.json';
import metaFormat from 'ajv/dist/refs/json-schema-2020-12/meta/format-annotation.json';
import metaData from 'ajv/dist/refs/json-schema-2020-12/meta/meta-data.json';
import metaUnevaluated from 'ajv/dist/refs/json-schema-2020-12/meta/unevaluated.json';
import metaValidation from 'ajv/dist/refs/json-schema-2020-12/meta/validation.json';

import type { Problem } from './schema-check';

const DRAFT_2020_12 = 'https://json-schema.org/draft/2020-12/schema';

/**
 * A meta-schema file as the validator should read it. `{"$dynamicRef": "#meta"}` becomes a plain `$ref` to the
 * root: @cfworker/json-schema does not follow `$dynamicRef`, and without this it would check no subschema; the two
 * mean the same here, where nothing extends the meta-schema (the dynamic scope always ends at the 2020-12 root).
 * Its `format` assertions (`uri-reference` for `$id`, `regex` for `pattern`) go: metadata's ajv has no formats and
 * takes `"$id": "my schema"`, and a `pattern` is RE2's to judge (patternProblem), not JavaScript's.
 */
const readable = (s: object): Schema =>
  JSON.parse(JSON.stringify(s).replaceAll('{"$dynamicRef":"#meta"}', JSON.stringify({ $ref: DRAFT_2020_12 })), (key, value: unknown) =>
    key === 'format' && typeof value === 'string' ? undefined : value,
  ) as Schema;

let metaValidator: Validator | undefined;
/** Built on the first check, not when the chunk loads. */
function meta(): Validator {
  if (!metaValidator) {
    // shortCircuit false: every problem, as metadata's ajv (allErrors) lists them.
    metaValidator = new Validator(readable(metaSchema), '2020-12', false);
    for (const m of [metaCore, metaApplicator, metaUnevaluated, metaValidation, metaData, metaFormat, metaContent]) metaValidator.addSchema(readable(m));
  }
  return metaValidator;
}

/** `#/properties/a~1b` as metadata names it: `schema.properties.a~1b` (ajv's instancePath split at `/`). */
const apiPath = (instanceLocation: string, prefix: string) =>
  [
    prefix,
    ...instanceLocation
      .replace(/^#/, '')
      .split('/')
      .filter(Boolean)
      .map((s) => decodeURIComponent(s)),
  ].join('.');

/**
 * The library reports every schema it entered on the way down ("A subschema had errors.", "Property "properties"
 * does not match schema."): only the errors no other error lies below (by keywordLocation) say what is wrong. One
 * problem per place in the schema, its errors joined (the branches of an `anyOf`, such as `type`'s "one of the
 * names, or a list of them").
 */
export function metaProblems(schema: unknown, prefix: string): Problem[] {
  const errors: OutputUnit[] = meta().validate(schema).errors;
  const leaves = errors.filter((e) => !errors.some((o) => o !== e && o.keywordLocation.startsWith(`${e.keywordLocation}/`)));
  const byPlace = new Map<string, string[]>();
  for (const e of leaves) byPlace.set(e.instanceLocation, [...(byPlace.get(e.instanceLocation) ?? []), e.error]);
  return [...byPlace].map(([place, messages]) => ({ path: apiPath(place, prefix), message: [...new Set(messages)].join(' Or: ') }));
}
