/**
 * A schema as it is typed (CONTRACT §5: Create/Update Schema), checked in the browser before it is sent: is it JSON,
 * is it a draft 2020-12 JSON Schema in the shape metadata's compiler accepts (services/metadata/src/domain/
 * asset-schema.ts: ajv's meta-schema, then compilation with linear-time patterns and no remote $ref), and are the
 * name and service_properties what the route takes. The console cannot run ajv (it generates code: the CSP forbids
 * eval), so this walks the keywords the meta-schema types; test/schema-check.unit.test.ts holds its verdict to
 * metadata's for a set of schemas. The API still decides: its 400 details land next to the field they name.
 */

export interface Problem {
  /** The API's path: `schema.properties.title.type`, `name`, `service_properties.title.ui`. */
  path: string;
  message: string;
}

export type Parsed = { ok: true; value: unknown } | { ok: false; message: string };

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** JSON.parse with the reason in words ("Not valid JSON: Unexpected token ..."). */
export function parseJson(text: string): Parsed {
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch (error) {
    return { ok: false, message: `Not valid JSON: ${error instanceof Error ? error.message : String(error)}` };
  }
}

const TYPES = ['array', 'boolean', 'integer', 'null', 'number', 'object', 'string'];
const SCHEMA_KEYWORDS = [
  'items',
  'additionalProperties',
  'not',
  'if',
  'then',
  'else',
  'contains',
  'propertyNames',
  'unevaluatedProperties',
  'unevaluatedItems',
  'contentSchema',
];
const SCHEMA_MAPS = ['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas'];
const SCHEMA_LISTS = ['allOf', 'anyOf', 'oneOf', 'prefixItems'];
const COUNTS = ['minLength', 'maxLength', 'minItems', 'maxItems', 'minProperties', 'maxProperties', 'minContains', 'maxContains'];
const NUMBERS = ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum'];
const STRINGS = ['title', 'description', 'format', '$comment', '$anchor', 'contentEncoding', 'contentMediaType', '$id'];
const BOOLEANS = ['uniqueItems', 'readOnly', 'writeOnly', 'deprecated'];

/**
 * Why RE2 (metadata's engine for `pattern`) would refuse a pattern JavaScript takes: back-references and look-around
 * need backtracking. Undefined when it is fine.
 */
export function patternProblem(pattern: string): string | undefined {
  try {
    new RegExp(pattern, 'u');
  } catch (error) {
    return `pattern ${JSON.stringify(pattern)} is not a regular expression (${error instanceof Error ? error.message : String(error)})`;
  }
  // Outside character classes and escapes: \1-\9, \k<name>, (?=, (?!, (?<=, (?<!.
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i];
    if (ch === '\\') {
      const next = pattern[i + 1] ?? '';
      if (!inClass && (/[1-9]/.test(next) || next === 'k')) return linearOnly(pattern);
      i++;
    } else if (ch === '[') inClass = true;
    else if (ch === ']') inClass = false;
    else if (!inClass && ch === '(' && /^\(\?(?:=|!|<=|<!)/.test(pattern.slice(i))) return linearOnly(pattern);
  }
  return undefined;
}

const linearOnly = (pattern: string) =>
  `pattern ${JSON.stringify(pattern)} is not accepted: only patterns that run in linear time (RE2 syntax: no back-references or look-around) are`;

function walk(node: unknown, path: string, root: unknown, out: Problem[]): void {
  if (typeof node === 'boolean') return;
  if (!isRecord(node)) {
    out.push({ path, message: 'must be object,boolean' });
    return;
  }
  const at = (k: string) => `${path}.${k}`;
  for (const [k, v] of Object.entries(node)) {
    if (k === 'type') {
      const list = Array.isArray(v) ? v : [v];
      if (list.length === 0 || !list.every((t) => typeof t === 'string' && TYPES.includes(t))) {
        out.push({ path: at(k), message: `must be one of ${TYPES.join(', ')} (or a list of them)` });
      } else if (new Set(list).size !== list.length) out.push({ path: at(k), message: 'must NOT have duplicate items' });
    } else if (SCHEMA_KEYWORDS.includes(k)) walk(v, at(k), root, out);
    else if (SCHEMA_MAPS.includes(k)) {
      if (!isRecord(v)) out.push({ path: at(k), message: 'must be object' });
      else for (const [name, sub] of Object.entries(v)) walk(sub, `${at(k)}.${name}`, root, out);
      if (k === 'patternProperties' && isRecord(v)) {
        for (const p of Object.keys(v)) {
          const why = patternProblem(p);
          if (why) out.push({ path: at(k), message: why });
        }
      }
    } else if (SCHEMA_LISTS.includes(k)) {
      if (!Array.isArray(v) || v.length === 0) out.push({ path: at(k), message: 'must be a non-empty array of schemas' });
      else v.forEach((sub, i) => walk(sub, `${at(k)}.${i}`, root, out));
    } else if (k === 'required') {
      if (!Array.isArray(v) || !v.every((r) => typeof r === 'string')) out.push({ path: at(k), message: 'must be an array of strings' });
      else if (new Set(v).size !== v.length) out.push({ path: at(k), message: 'must NOT have duplicate items' });
    } else if (k === 'enum') {
      if (!Array.isArray(v)) out.push({ path: at(k), message: 'must be array' });
    } else if (COUNTS.includes(k)) {
      if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) out.push({ path: at(k), message: 'must be a whole number, 0 or more' });
    } else if (NUMBERS.includes(k)) {
      if (typeof v !== 'number') out.push({ path: at(k), message: 'must be number' });
    } else if (k === 'multipleOf') {
      if (typeof v !== 'number' || v <= 0) out.push({ path: at(k), message: 'must be a number above 0' });
    } else if (STRINGS.includes(k)) {
      if (typeof v !== 'string') out.push({ path: at(k), message: 'must be string' });
    } else if (BOOLEANS.includes(k)) {
      if (typeof v !== 'boolean') out.push({ path: at(k), message: 'must be boolean' });
    } else if (k === 'pattern') {
      const why = typeof v === 'string' ? patternProblem(v) : 'must be string';
      if (why) out.push({ path: at(k), message: why });
    } else if (k === '$ref') {
      if (typeof v !== 'string') out.push({ path: at(k), message: 'must be string' });
      else if (!resolves(root, v))
        out.push({ path: at(k), message: `can't resolve reference ${v} (only references inside the schema, "#/...", are followed)` });
    } else if (k === 'dependentRequired') {
      if (!isRecord(v) || !Object.values(v).every((l) => Array.isArray(l) && l.every((s) => typeof s === 'string'))) {
        out.push({ path: at(k), message: 'must be an object of arrays of strings' });
      }
    }
  }
}

/** A local JSON pointer (`#`, `#/$defs/name`) that names a part of the schema. */
function resolves(root: unknown, ref: string): boolean {
  if (ref === '#') return true;
  if (!ref.startsWith('#/')) return false;
  let node: unknown = root;
  for (const raw of ref.slice(2).split('/')) {
    const key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    if (!isRecord(node) && !Array.isArray(node)) return false;
    node = (node as Record<string, unknown>)[key];
    if (node === undefined) return false;
  }
  return true;
}

/** The problems of a schema document (an object or a boolean), at the API's paths below `schema`. */
export function checkSchema(schema: unknown): Problem[] {
  if (typeof schema !== 'boolean' && !isRecord(schema)) return [{ path: 'schema', message: 'must be a JSON Schema (an object or a boolean)' }];
  const out: Problem[] = [];
  if (isRecord(schema) && '$schema' in schema && schema.$schema !== 'https://json-schema.org/draft/2020-12/schema') {
    out.push({ path: 'schema.$schema', message: 'must be "https://json-schema.org/draft/2020-12/schema" (draft 2020-12) or left out' });
  }
  walk(schema, 'schema', schema, out);
  return out;
}

/** Create/Update Schema's `name` (1-200 characters once trimmed) and `service_properties` (zod's words). */
export function checkName(name: string): Problem[] {
  const n = name.trim();
  if (n.length < 1) return [{ path: 'name', message: 'Too small: expected string to have >=1 characters' }];
  if (n.length > 200) return [{ path: 'name', message: 'Too big: expected string to have <=200 characters' }];
  return [];
}

export function checkServiceProperties(sp: unknown): Problem[] {
  if (!isRecord(sp))
    return [
      { path: 'service_properties', message: 'Invalid input: expected record, received ' + (Array.isArray(sp) ? 'array' : sp === null ? 'null' : typeof sp) },
    ];
  const out: Problem[] = [];
  for (const [k, v] of Object.entries(sp)) {
    const path = `service_properties.${k}`;
    if (k.length > 500) out.push({ path, message: 'Too big: expected string to have <=500 characters' });
    if (!isRecord(v)) {
      out.push({ path, message: `Invalid input: expected object, received ${Array.isArray(v) ? 'array' : v === null ? 'null' : typeof v}` });
      continue;
    }
    for (const flag of ['searchable', 'keyword'] as const) {
      if (flag in v && typeof v[flag] !== 'boolean')
        out.push({ path: `${path}.${flag}`, message: `Invalid input: expected boolean, received ${typeof v[flag]}` });
    }
    if ('ui' in v && !isRecord(v.ui))
      out.push({ path: `${path}.ui`, message: 'Invalid input: expected record, received ' + (Array.isArray(v.ui) ? 'array' : typeof v.ui) });
  }
  return out;
}
