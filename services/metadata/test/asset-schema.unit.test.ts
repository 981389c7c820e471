import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { retainedBytesPerCall, scaled } from '@dam/testing';
import { AppError, type ErrorDetail } from '@dam/errors';
import { compileSchema, validateAgainst, type AssetSchema } from '../src/domain/asset-schema';

const schemaWith = (schema: Record<string, unknown>): AssetSchema => ({
  id: 4,
  groupId: 3,
  name: 'redos',
  schema,
  serviceProperties: {},
  createdAt: new Date(0),
  updatedAt: new Date(0),
});

const details = (error: AppError): ErrorDetail[] => error.details as ErrorDetail[];
const refusal = (fn: () => unknown): AppError => {
  try {
    fn();
  } catch (error) {
    if (error instanceof AppError) return error;
    throw error;
  }
  throw new Error('not refused');
};

describe("a tenant's schema patterns (security review F2)", () => {
  it('validates a catastrophic-backtracking pattern in linear time: 2,000 characters answer at once', () => {
    // With JavaScript's RegExp, `^(a|a)*$` on 25 characters took 468 ms and doubled every two more: 40 would take
    // hours, holding the event loop. A hung main thread also stops jest's timers, so it runs in a child with a
    // deadline, as long as the suite gives any test.
    const source = path.join(__dirname, '../src/domain/asset-schema.ts');
    const script = `
      const { validateAgainst } = require(${JSON.stringify(source)});
      const schema = { id: 4, groupId: 3, name: 'redos', serviceProperties: {}, createdAt: new Date(0), updatedAt: new Date(0),
        schema: { type: 'object', properties: { t: { type: 'string', pattern: '^(a|a)*$' } }, patternProperties: { '^(x+x+)+y$': { type: 'string' } } } };
      const outcomes = [];
      for (const value of ['a'.repeat(40) + '!', 'a'.repeat(2000) + '!', 'a'.repeat(2000)]) {
        try { validateAgainst(schema, { t: value, ['x'.repeat(2000)]: 'v' }); outcomes.push('valid'); }
        catch (e) { outcomes.push(e.code + ' ' + e.details.map((d) => d.path).join(',')); }
      }
      process.stdout.write(JSON.stringify(outcomes));
    `;
    const run = spawnSync(process.execPath, ['--require', 'tsx/cjs', '-e', script], { timeout: scaled(20_000), encoding: 'utf8' });
    expect({ signal: run.signal, status: run.status, stderr: run.stderr }).toEqual({ signal: null, status: 0, stderr: '' });
    expect(JSON.parse(run.stdout)).toEqual(['VALIDATION_FAILED data.t', 'VALIDATION_FAILED data.t', 'valid']);
  });

  it('keeps what patterns mean: anchors, classes, Unicode, patternProperties', () => {
    const schema = schemaWith({
      type: 'object',
      properties: { sku: { type: 'string', pattern: '^[A-Z]{3}-\\d{4}$' }, word: { type: 'string', pattern: '^\\p{L}+$' } },
      patternProperties: { '^x-': { type: 'integer' } },
    });
    expect(() => validateAgainst(schema, { sku: 'ABC-1234', word: 'héllo', 'x-count': 3 })).not.toThrow();
    const bad = refusal(() => validateAgainst(schema, { sku: 'abc-1234', word: 'h3llo', 'x-count': 'three' }));
    expect(
      details(bad)
        .map((d) => d.path)
        .sort(),
    ).toEqual(['data.sku', 'data.word', 'data.x-count']);
  });

  it.each([
    ['a back-reference', { properties: { t: { type: 'string', pattern: '^(a+)\\1$' } } }, '^(a+)\\1$'],
    ['a look-ahead', { properties: { t: { type: 'string', pattern: '^(?=.*\\d).+$' } } }, '^(?=.*\\d).+$'],
    ['a look-behind in patternProperties', { patternProperties: { '(?<!x)y': { type: 'string' } } }, '(?<!x)y'],
  ])('refuses a schema with %s (400 VALIDATION_FAILED naming the pattern)', (_what, schema, pattern) => {
    const error = refusal(() => compileSchema(schema));
    expect(error).toMatchObject({ kind: 'VALIDATION', code: 'VALIDATION_FAILED' });
    expect(details(error)[0]?.message).toContain(JSON.stringify(pattern));
  });
});

let nextId = 100;
/** A schema record as the repository returns it: a new object each read. */
const record = (groupId: number, schema: Record<string, unknown>): AssetSchema => ({
  id: nextId++,
  groupId,
  name: 'product',
  schema: structuredClone(schema),
  serviceProperties: {},
  createdAt: new Date(0),
  updatedAt: new Date(0),
});

const PRODUCT = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  $id: 'https://example.com/product.schema.json',
  type: 'object',
  properties: { sku: { type: 'string', maxLength: 8 } },
  required: ['sku'],
};

describe('schemas with an $id', () => {
  it('compile again when read back, and another group may use the same $id with other rules', () => {
    // Create (the request's document), then Update Data against the record read back: the same $id twice.
    compileSchema(structuredClone(PRODUCT));
    expect(() => validateAgainst(record(1, PRODUCT), { sku: 'A-1' })).not.toThrow();
    expect(refusal(() => validateAgainst(record(1, PRODUCT), { sku: 'far-too-long' })).code).toBe('VALIDATION_FAILED');
    // Another group, the same $id, a different rule: its own rule applies.
    const other = { ...PRODUCT, properties: { sku: { type: 'integer' } } };
    compileSchema(structuredClone(other));
    expect(() => validateAgainst(record(2, other), { sku: 7 })).not.toThrow();
    expect(refusal(() => validateAgainst(record(2, other), { sku: 'A-1' })).code).toBe('VALIDATION_FAILED');
    expect(() => validateAgainst(record(1, PRODUCT), { sku: 'A-2' })).not.toThrow();
  });

  it("never resolves a $ref to another group's schema", () => {
    compileSchema(structuredClone({ ...PRODUCT, $id: 'https://example.com/secret.schema.json' }));
    const error = refusal(() => compileSchema({ $ref: 'https://example.com/secret.schema.json' }));
    expect(error.code).toBe('VALIDATION_FAILED');
    expect(error.message).toBe('The schema cannot be compiled');
  });

  it('keeps nothing per schema compiled beyond the validator it returns', async () => {
    // Each call compiles a new object, as each cache miss reads one; a shared ajv instance kept every one (2.5 KB).
    const { $id, ...withoutId } = PRODUCT; // with its $id, a shared instance refused the second call instead
    expect($id).toBeDefined();
    expect(await retainedBytesPerCall(() => void compileSchema(structuredClone(withoutId)), 1000)).toBeLessThan(500);
  });
});
