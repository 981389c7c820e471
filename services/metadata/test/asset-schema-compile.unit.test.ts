import { AppError } from '@dam/errors';
import { retainedBytesPerCall } from '@dam/testing';
import { compileSchema, validateAgainst, type AssetSchema } from '../src/domain/asset-schema';

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

const refusal = (fn: () => unknown): AppError => {
  try {
    fn();
  } catch (error) {
    if (error instanceof AppError) return error;
    throw error;
  }
  throw new Error('not refused');
};

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
