/**
 * A schema as it is typed (CONTRACT §5: Create/Update Schema), checked in the browser before it is sent: is it JSON,
 * is it a draft 2020-12 JSON Schema in the shape metadata's compiler accepts (services/metadata/src/domain/
 * asset-schema.ts: ajv's meta-schema, then compilation with linear-time patterns and no remote $ref), and are the
 * name and service_properties what the route takes. The console cannot run ajv (it generates code: the CSP forbids
 * eval), so @cfworker/json-schema, which interprets, checks the schema against the same meta-schema files ajv ships
 * and metadata uses (lib/schema-meta.ts, loaded by loadSchemaCheck()); what only metadata's compiler knows (RE2 patterns, local references) is checked here after it.
 * test/schema-check.unit.test.ts holds the verdict to metadata's for a set of schemas. The API still decides: its
 * 400 details land next to the field they name.
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

const DRAFT_2020_12 = 'https://json-schema.org/draft/2020-12/schema';

let metaProblems: typeof import('./schema-meta').metaProblems | undefined;

/** Loads the meta-schema check (lib/schema-meta.ts, its own chunk); checkSchema needs it done. */
export async function loadSchemaCheck(): Promise<void> {
  metaProblems ??= (await import('./schema-meta')).metaProblems;
}

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

/** Keywords whose value maps names to subschemas: their keys are names, not keywords. */
const SCHEMA_MAPS = new Set(['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas']);
/** Keywords whose value is data, not schema: a `pattern` or `$ref` in it is a value like any other. */
const DATA = new Set(['enum', 'const', 'default', 'examples']);

interface Found {
  patterns: { path: string; pattern: string }[];
  refs: { path: string; ref: string }[];
  anchors: Set<string>;
}

/** The patterns, references and anchors of a schema that has passed the meta-schema, at the API's paths. */
function collect(node: unknown, path: string, found: Found): void {
  if (Array.isArray(node)) node.forEach((sub, i) => collect(sub, `${path}.${i}`, found));
  if (!isRecord(node)) return;
  for (const [k, v] of Object.entries(node)) {
    const at = `${path}.${k}`;
    if (DATA.has(k)) continue;
    if (k === 'pattern' && typeof v === 'string') found.patterns.push({ path: at, pattern: v });
    else if (k === '$ref' && typeof v === 'string') found.refs.push({ path: at, ref: v });
    else if (k === '$anchor' && typeof v === 'string') found.anchors.add(v);
    else if (SCHEMA_MAPS.has(k) && isRecord(v)) {
      for (const [name, sub] of Object.entries(v)) {
        if (k === 'patternProperties') found.patterns.push({ path: at, pattern: name });
        collect(sub, `${at}.${name}`, found);
      }
    } else collect(v, at, found);
  }
}

/** A reference metadata's compiler follows: `#`, a local JSON pointer (`#/$defs/name`) or an `$anchor` of the schema. */
function resolves(root: unknown, ref: string, anchors: Set<string>): boolean {
  if (ref === '#') return true;
  if (/^#[A-Za-z_][-A-Za-z0-9._]*$/.test(ref)) return anchors.has(ref.slice(1));
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
  if (isRecord(schema) && '$schema' in schema && schema.$schema !== DRAFT_2020_12) {
    out.push({ path: 'schema.$schema', message: `must be "${DRAFT_2020_12}" (draft 2020-12) or left out` });
  }
  if (!metaProblems) throw new Error('checkSchema before loadSchemaCheck()');
  out.push(...metaProblems(schema, 'schema'));
  if (out.length > 0) return out;
  // Valid syntax; what metadata's compiler refuses besides: patterns RE2 cannot run, references it cannot follow.
  const found: Found = { patterns: [], refs: [], anchors: new Set() };
  collect(schema, 'schema', found);
  for (const { path, pattern } of found.patterns) {
    const why = patternProblem(pattern);
    if (why) out.push({ path, message: why });
  }
  for (const { path, ref } of found.refs) {
    if (!resolves(schema, ref, found.anchors))
      out.push({ path, message: `can't resolve reference ${ref} (only references inside the schema, "#/..." or "#anchor", are followed)` });
  }
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
