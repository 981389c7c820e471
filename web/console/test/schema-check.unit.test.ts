import { compileSchema } from '../../../services/metadata/src/domain/asset-schema';
import { checkName, checkSchema, checkServiceProperties, loadSchemaCheck, parseJson, patternProblem } from '../src/lib/schema-check';

/** metadata's answer to a schema: the paths of its 400 details, or [] when it compiles. */
function metadataPaths(schema: unknown): string[] {
  try {
    compileSchema(schema);
    return [];
  } catch (error) {
    return ((error as { details?: { path: string }[] }).details ?? []).map((d) => d.path);
  }
}

const schemas: [string, unknown][] = [
  ['the default', { $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object', properties: { service_search_txt: { type: 'string' } } }],
  ['true', true],
  ['an array', []],
  ['a string', 'object'],
  ['null', null],
  [
    'a photo schema',
    { type: 'object', properties: { title: { type: 'string', maxLength: 200 }, rating: { type: 'integer', minimum: 1, maximum: 5 } }, required: ['title'] },
  ],
  ['a misspelt type', { type: 'object', properties: { title: { type: 'strnig' } } }],
  ['types in a list', { type: ['string', 'null'] }],
  ['a repeated type', { type: ['string', 'string'] }],
  ['required not a list', { type: 'object', required: 'title' }],
  ['required of numbers', { required: [1] }],
  ['a negative maxLength', { type: 'string', maxLength: -1 }],
  ['a fractional minItems', { type: 'array', minItems: 1.5 }],
  ['a minimum as text', { minimum: '1' }],
  ['properties as a list', { properties: [] }],
  ['a property that is a number', { properties: { a: 5 } }],
  ['an empty anyOf', { anyOf: [] }],
  ['items as a schema', { type: 'array', items: { type: 'string', enum: ['a', 'b'] } }],
  ['enum not a list', { enum: 'a' }],
  ['a linear pattern', { type: 'string', pattern: '^[A-Z]{2}-[0-9]+$' }],
  ['a back-reference', { type: 'string', pattern: '^(a)\\1$' }],
  ['a look-ahead', { type: 'string', pattern: '^(?=a)a$' }],
  ['an unclosed group', { type: 'string', pattern: '^(a$' }],
  ['a local $ref', { $defs: { name: { type: 'string' } }, properties: { first: { $ref: '#/$defs/name' } } }],
  ['a missing $ref', { properties: { first: { $ref: '#/$defs/nothing' } } }],
  ['a remote $ref', { properties: { first: { $ref: 'https://example.com/s.json' } } }],
  ['uniqueItems as text', { uniqueItems: 'yes' }],
  ['a title that is a number', { title: 5 }],
  ['multipleOf 0', { multipleOf: 0 }],
  ['an unknown keyword', { type: 'object', 'x-widget': 'stars' }],
  // Beyond the keywords a hand walk of the meta-schema would list: the whole meta-schema, as metadata holds it.
  ['dependencies of a number', { dependencies: { a: 5 } }],
  ['an $anchor that is no name', { $anchor: '1 bad' }],
  ['$vocabulary as a list', { $vocabulary: [] }],
  ['examples not a list', { examples: 'a' }],
  ['a repeated dependentRequired name', { dependentRequired: { a: ['b', 'b'] } }],
  ['a $dynamicAnchor that is a number', { $dynamicAnchor: 5 }],
  ['a nested bad type in dependencies', { $defs: { d: { dependencies: { a: { type: 'strnig' } } } } }],
  ['a $ref to an $anchor', { $defs: { name: { $anchor: 'name', type: 'string' } }, properties: { first: { $ref: '#name' } } }],
  ['a $ref to a missing $anchor', { properties: { first: { $ref: '#nothing' } } }],
  ['a $ref and a pattern in a default', { type: 'object', default: { $ref: 'https://example.com/s.json', pattern: '(?=a)' } }],
  ['a property named pattern', { type: 'object', properties: { pattern: { type: 'string', pattern: '^a+$' } } }],
  ['an $id with a fragment', { $id: 'https://example.com/photo#frag' }],
  ['an $id with a space (no format is asserted)', { $id: 'photo schema' }],
  ['a look-behind in patternProperties', { type: 'object', patternProperties: { '(?<=a)b': { type: 'string' } } }],
];

describe("the console checks a schema as metadata's compiler does", () => {
  beforeAll(() => loadSchemaCheck());

  it.each(schemas)('%s: refused exactly when metadata refuses it, at a path metadata names', (_what, schema) => {
    const mine = checkSchema(schema).map((p) => p.path);
    const theirs = metadataPaths(schema);
    expect(mine.length > 0).toBe(theirs.length > 0);
    for (const p of mine) expect(theirs.some((t) => t === p || t.startsWith(`${p}.`) || p.startsWith(`${t}.`) || t === 'schema')).toBe(true);
  });

  it('says what is wrong in words', () => {
    expect(checkSchema([])).toEqual([{ path: 'schema', message: 'must be a JSON Schema (an object or a boolean)' }]);
    expect(checkSchema({ properties: { title: { type: 'strnig' } } })[0]?.path).toBe('schema.properties.title.type');
    // One problem per place, not the meta-schema's way down to it ("A subschema had errors.").
    expect(checkSchema({ type: 'object', properties: { title: { type: 'strnig' } }, required: 'title' })).toEqual([
      { path: 'schema.properties.title.type', message: expect.stringContaining('"array","boolean","integer","null","number","object","string"') },
      { path: 'schema.required', message: 'Instance type "string" is invalid. Expected "array".' },
    ]);
    expect(patternProblem('^(a)\\1$')).toMatch(/only patterns that run in linear time/);
    expect(patternProblem('^[(?=x]+$')).toBeUndefined();
  });

  it('reads JSON with the reason when it is not', () => {
    expect(parseJson('{"a": 1}')).toEqual({ ok: true, value: { a: 1 } });
    const bad = parseJson('{"a": }');
    expect(bad.ok).toBe(false);
    expect(!bad.ok && bad.message).toMatch(/^Not valid JSON: /);
  });

  it('checks the name and service_properties as the route does', () => {
    expect(checkName('  ')).toEqual([{ path: 'name', message: 'Too small: expected string to have >=1 characters' }]);
    expect(checkName('n'.repeat(201))).toEqual([{ path: 'name', message: 'Too big: expected string to have <=200 characters' }]);
    expect(checkName(' photo ')).toEqual([]);
    expect(checkServiceProperties({ title: { searchable: true, ui: { widget: 'textarea' } } })).toEqual([]);
    expect(checkServiceProperties({ title: { searchable: 'yes' } })).toEqual([
      { path: 'service_properties.title.searchable', message: 'Invalid input: expected boolean, received string' },
    ]);
    expect(checkServiceProperties([])).toHaveLength(1);
  });
});
