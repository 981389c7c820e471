import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { z } from 'zod';
import { OPENAPI_YAML_PATH } from '../src/http/openapi.routes';

/**
 * Compares a schema of docs/openapi.yaml with the JSON Schema zod makes of a service's schema
 * (`z.toJSONSchema`): property names, the required set, types and nullability, enums and constants, formats,
 * patterns, numeric, length and count bounds, defaults, closed objects, map values and array items. What zod cannot
 * express (refinements, transforms) is out of reach: those routes list what they add by hand.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- walking arbitrary JSON documents
export type Json = any;

export const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;

export const loadDoc = (): Json => parse(readFileSync(OPENAPI_YAML_PATH, 'utf8'));

/** `#/a/b~1c` inside `root`. */
export function atPointer(root: Json, ref: string): Json {
  if (!ref.startsWith('#')) throw new Error(`only local references are followed: ${ref}`);
  return ref
    .replace(/^#\/?/, '')
    .split('/')
    .filter((p) => p.length > 0)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce<Json>((node, key) => (node === undefined ? undefined : node[key]), root);
}

/** A `$ref` followed until it is none (parameters, request bodies, responses). */
export function deref(root: Json, node: Json): Json {
  let n = node;
  for (let i = 0; n && typeof n === 'object' && typeof n.$ref === 'string' && i < 20; i += 1) n = atPointer(root, n.$ref);
  return n;
}

/** Request schemas as services validate them (the input side); responses as they are produced (the output side). */
export const zodInput = (schema: z.ZodType): Json => z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' });
export const zodOutput = (schema: z.ZodType): Json => z.toJSONSchema(schema, { io: 'output', unrepresentable: 'any' });

const BOUNDS = [
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'minLength',
  'maxLength',
  'minItems',
  'maxItems',
  'minProperties',
  'maxProperties',
] as const;
type Bound = (typeof BOUNDS)[number];

/** One schema node reduced to what is compared. */
interface Shape {
  /** JSON types without `null`; undefined: anything. */
  types?: Set<string>;
  /** Undefined where the node says nothing about types. */
  nullable?: boolean;
  /** `const` counts as a one-value enum. */
  enum?: unknown[];
  formats: Set<string>;
  pattern?: string;
  bounds: Partial<Record<Bound, number>>;
  default?: { value: unknown };
  properties?: Record<string, Json>;
  required: Set<string>;
  /** false: closed; a schema: the values of a map; undefined: open, values undescribed. */
  additional?: false | Json;
  propertyNamesPattern?: string;
  items?: Json;
  /** anyOf/oneOf of objects, compared branch by branch. */
  branches?: Json[];
}

const SAFE = Number.MAX_SAFE_INTEGER;

function own(node: Json): Shape {
  const shape: Shape = { formats: new Set(), bounds: {}, required: new Set(node.required ?? []) };
  if (node.type !== undefined) {
    const types = new Set<string>(Array.isArray(node.type) ? node.type : [node.type]);
    shape.nullable = types.delete('null');
    shape.types = types;
  }
  if (node.const !== undefined) shape.enum = [node.const];
  if (Array.isArray(node.enum)) {
    shape.nullable ||= node.enum.includes(null);
    shape.enum = node.enum.filter((v: unknown) => v !== null);
  }
  if (shape.enum && !shape.types) shape.types = new Set(shape.enum.map((v) => (Number.isInteger(v) ? 'integer' : typeof v)));
  // An enum of whole numbers is of integers, whatever its `type` says (zod writes `number` for numeric literals).
  if (shape.enum?.every((v) => Number.isInteger(v)) && shape.types?.has('number'))
    shape.types = new Set([...shape.types].map((t) => (t === 'number' ? 'integer' : t)));
  if (typeof node.format === 'string') shape.formats.add(node.format);
  // A format's own pattern (zod writes one for email, date-time, date) says nothing the format does not.
  if (typeof node.pattern === 'string' && node.format === undefined) shape.pattern = node.pattern;
  for (const b of BOUNDS) if (typeof node[b] === 'number') shape.bounds[b] = node[b];
  const integer = shape.types?.size === 1 && shape.types.has('integer');
  if (integer && shape.bounds.exclusiveMinimum !== undefined) shape.bounds.minimum = shape.bounds.exclusiveMinimum + 1;
  if (integer && shape.bounds.exclusiveMaximum !== undefined) shape.bounds.maximum = shape.bounds.exclusiveMaximum - 1;
  if (integer) delete shape.bounds.exclusiveMinimum;
  if (integer) delete shape.bounds.exclusiveMaximum;
  // zod's integers carry the safe-integer range; the document leaves it implicit.
  if (shape.bounds.minimum === -SAFE) delete shape.bounds.minimum;
  if (shape.bounds.maximum === SAFE) delete shape.bounds.maximum;
  if ('default' in node) shape.default = { value: node.default };
  if (node.properties) shape.properties = { ...node.properties };
  if (node.additionalProperties === false) shape.additional = false;
  else if (node.additionalProperties !== undefined && node.additionalProperties !== true) shape.additional = node.additionalProperties;
  if (node.propertyNames?.pattern) shape.propertyNamesPattern = node.propertyNames.pattern;
  if (node.items !== undefined) shape.items = node.items;
  if (shape.properties || shape.additional !== undefined || node.required) shape.types ??= new Set(['object']);
  if (shape.items !== undefined) shape.types ??= new Set(['array']);
  return shape;
}

function merge(a: Shape, b: Shape): Shape {
  return {
    types: a.types && b.types ? new Set([...a.types].filter((t) => b.types?.has(t) || (t === 'integer' && b.types?.has('number')))) : (a.types ?? b.types),
    nullable: a.nullable === undefined ? b.nullable : b.nullable === undefined ? a.nullable : a.nullable && b.nullable,
    enum: a.enum ?? b.enum,
    formats: new Set([...a.formats, ...b.formats]),
    pattern: a.pattern ?? b.pattern,
    bounds: { ...a.bounds, ...b.bounds },
    default: a.default ?? b.default,
    properties: a.properties || b.properties ? { ...a.properties, ...b.properties } : undefined,
    required: new Set([...a.required, ...b.required]),
    additional: a.additional ?? b.additional,
    propertyNamesPattern: a.propertyNamesPattern ?? b.propertyNamesPattern,
    items: a.items ?? b.items,
    branches: a.branches ?? b.branches,
  };
}

const ANY: Shape = { nullable: true, formats: new Set(), bounds: {}, required: new Set() };
const isAny = (s: Shape): boolean => s.types === undefined && !s.properties && s.additional === undefined && !s.branches && !s.enum;

/** Flattens `$ref`, `allOf`, `anyOf` and `oneOf` into one shape; `root` resolves references. */
export function shapeOf(root: Json, node: Json): Shape {
  if (node === true || node === undefined || node === null) return { ...ANY };
  const { $ref, allOf, anyOf, oneOf, not: _not, ...rest } = node as Record<string, Json>;
  let shape = own(rest);
  if (typeof $ref === 'string') shape = merge(shapeOf(root, atPointer(root, $ref)), shape);
  for (const part of (allOf ?? []) as Json[]) shape = merge(shape, shapeOf(root, part));
  const alternatives = (anyOf ?? oneOf) as Json[] | undefined;
  if (alternatives) shape = merge(union(alternatives.map((b) => shapeOf(root, b))), shape);
  return shape;
}

function union(branches: Shape[]): Shape {
  const nullable = branches.some((b) => b.nullable === true);
  const real = branches.filter((b) => !(b.types?.size === 0));
  if (real.some(isAny)) return { ...ANY };
  if (real.length === 1) return { ...(real[0] as Shape), nullable };
  const objects = real.filter((b) => b.types?.has('object') && b.properties);
  if (objects.length === real.length) return { ...ANY, types: new Set(['object']), nullable, branches: objects };
  const same = <T>(pick: (b: Shape) => T): T | undefined => {
    const values = real.map((b) => JSON.stringify(pick(b)));
    return values.every((v) => v === values[0]) ? pick(real[0] as Shape) : undefined;
  };
  return {
    types: new Set(real.flatMap((b) => [...(b.types ?? [])])),
    nullable,
    enum: real.every((b) => b.enum) ? real.flatMap((b) => b.enum ?? []) : undefined,
    formats: new Set(real.flatMap((b) => [...b.formats])),
    pattern: same((b) => b.pattern),
    bounds: same((b) => b.bounds) ?? {},
    default: real.find((b) => b.default)?.default,
    required: new Set(),
  };
}

export interface Problem {
  /** Where: `POST /api/v1/x body.a.b`. */
  at: string;
  /** What differs: a keyword (`maxLength`), or `properties`, `required`, `type`. */
  what: string;
  doc: unknown;
  service: unknown;
}

export type Direction = 'request' | 'response';

const sorted = <T>(values: Iterable<T>): T[] => [...values].sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
const sameSet = (a: Iterable<unknown>, b: Iterable<unknown>): boolean => JSON.stringify(sorted(a)) === JSON.stringify(sorted(b));

/**
 * `doc` (in `docRoot`) against `service` (zod's JSON Schema, its own root). A request schema must say exactly what
 * the service takes. A response schema may be wider than what the service produces, never narrower: a bound,
 * pattern or closed object the service does not promise is reported, one it promises and the document leaves out
 * is not.
 */
export function compareSchemas(docRoot: Json, doc: Json, serviceRoot: Json, service: Json, at: string, direction: Direction): Problem[] {
  const problems: Problem[] = [];
  const walk = (d: Shape, s: Shape, where: string): void => {
    const report = (what: string, docValue: unknown, serviceValue: unknown) => problems.push({ at: where, what, doc: docValue, service: serviceValue });
    if (isAny(s)) return;
    if (isAny(d)) {
      report('type', 'anything', sorted(s.types ?? []));
      return;
    }
    if (!sameSet(d.types ?? [], s.types ?? [])) report('type', sorted(d.types ?? []), sorted(s.types ?? []));
    if ((d.nullable ?? false) !== (s.nullable ?? false)) report('nullable', d.nullable ?? false, s.nullable ?? false);
    if ((d.enum || s.enum) && !sameSet(d.enum ?? [], s.enum ?? [])) report('enum', d.enum, s.enum);
    const formatsDiffer = !sameSet(d.formats, s.formats);
    if (formatsDiffer && (direction === 'request' || [...d.formats].some((f) => !s.formats.has(f)))) report('format', sorted(d.formats), sorted(s.formats));
    if (d.pattern !== s.pattern && (direction === 'request' || d.pattern !== undefined)) report('pattern', d.pattern, s.pattern);
    for (const b of BOUNDS) {
      const [dv, sv] = [d.bounds[b], s.bounds[b]];
      if (dv !== sv && (direction === 'request' || dv !== undefined)) report(b, dv, sv);
    }
    if (direction === 'request' && JSON.stringify(d.default) !== JSON.stringify(s.default)) report('default', d.default?.value, s.default?.value);

    if (s.branches || d.branches) {
      compareBranches(d, s, where, report);
      return;
    }
    // An answer typed as an open map of anything (`Record<string, unknown>`) may be documented as an open object
    // naming the members it usually has, none of them required.
    const anyMap = (x: Shape) => !x.properties && x.additional !== false && (x.additional === undefined || isAny(shapeOf(serviceRoot, x.additional)));
    const describedMap = direction === 'response' && anyMap(s) && d.additional !== false && d.required.size === 0;
    if ((s.properties || d.properties) && !describedMap) {
      const [dp, sp] = [d.properties ?? {}, s.properties ?? {}];
      if (!sameSet(Object.keys(dp), Object.keys(sp))) report('properties', Object.keys(dp).sort(), Object.keys(sp).sort());
      if (!sameSet(d.required, s.required)) report('required', sorted(d.required), sorted(s.required));
      for (const name of Object.keys(sp).filter((n) => n in dp)) walk(shapeOf(docRoot, dp[name]), shapeOf(serviceRoot, sp[name]), `${where}.${name}`);
    }
    const closed = (x: Shape) => x.additional === false;
    if (direction === 'request' ? closed(d) !== closed(s) : closed(d) && !closed(s))
      report('additionalProperties', closed(d) ? false : 'open', closed(s) ? false : 'open');
    if (s.additional && d.additional === undefined && !s.properties && !isAny(shapeOf(serviceRoot, s.additional)))
      report('additionalProperties', 'undescribed', 'a map');
    if (s.additional && d.additional) walk(shapeOf(docRoot, d.additional), shapeOf(serviceRoot, s.additional), `${where}.*`);
    if (s.propertyNamesPattern !== undefined && d.propertyNamesPattern !== s.propertyNamesPattern)
      report('propertyNames', d.propertyNamesPattern, s.propertyNamesPattern);
    if (s.items !== undefined) {
      if (d.items === undefined) report('items', 'undescribed', 'described');
      else walk(shapeOf(docRoot, d.items), shapeOf(serviceRoot, s.items), `${where}[]`);
    }
  };
  const compareBranches = (d: Shape, s: Shape, where: string, report: (what: string, doc: unknown, service: unknown) => void) => {
    const keysOf = (b: Json) =>
      Object.keys(b.properties ?? {})
        .sort()
        .join(',');
    const [db, sb] = [d.branches ?? [], s.branches ?? []];
    if (!sameSet(db.map(keysOf), sb.map(keysOf))) {
      report('oneOf', db.map(keysOf), sb.map(keysOf));
      return;
    }
    for (const branch of sb) {
      const match = db.find((b) => keysOf(b) === keysOf(branch)) as Json;
      walk({ ...match, branches: undefined }, { ...branch, branches: undefined }, `${where}{${keysOf(branch)}}`);
    }
  };
  walk(shapeOf(docRoot, doc), shapeOf(serviceRoot, service), at);
  return problems;
}

export interface Operation {
  /** `METHOD /path` as written in the document. */
  key: string;
  path: string;
  item: Json;
  op: Json;
}

export const operationsOf = (doc: Json): Operation[] =>
  Object.entries(doc.paths as Record<string, Json>).flatMap(([path, item]) =>
    METHODS.filter((m) => item[m]).map((m) => ({ key: `${m.toUpperCase()} ${path}`, path, item, op: item[m] })),
  );

/** Path-level parameters overridden by the operation's own (by name and place). */
export function parametersOf(doc: Json, { item, op }: Operation): Json[] {
  const all = [...((item.parameters ?? []) as Json[]), ...((op.parameters ?? []) as Json[])].map((p) => deref(doc, p));
  return [...new Map(all.map((p) => [`${p.in} ${p.name}`, p])).values()];
}

/**
 * The document's names of path parameters by the express names of the same segments (`:id` → `asset_id`); a
 * segment that differs otherwise is a problem of `at`.
 */
export function renames(at: string, path: string, route: string, problems: Problem[] = []): Map<string, string> {
  const [docSegments, routeSegments] = [path.split('/'), route.split('/')];
  const names = new Map<string, string>();
  const differ = () => problems.push({ at, what: 'route', doc: path, service: route });
  if (docSegments.length !== routeSegments.length) differ();
  docSegments.forEach((segment, i) => {
    const other = routeSegments[i] ?? '';
    const param = /^\{(\w+)\}$/.exec(segment)?.[1];
    if (param && other.startsWith(':')) names.set(other.slice(1), param);
    else if (segment !== other) differ();
  });
  return names;
}
