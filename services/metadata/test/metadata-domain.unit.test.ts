import { AppError } from '@dam/errors';
import { applyCustomMetadata, validateCustomMetadata } from '../src/domain/custom-metadata';
import { compileSchema, defaultSchema, validateAgainst } from '../src/domain/asset-schema';
import { contentDisposition } from '@dam/http';
import { isOwnConversionKey, isOwnOriginalKey } from '../src/domain/object-keys';

describe('validateCustomMetadata', () => {
  it('defaults mode to APPEND', () => {
    expect(validateCustomMetadata({ data: { a: 1 } }, 'custom_metadata')).toEqual({ data: { a: 1 }, mode: 'APPEND' });
  });

  it('lists every reserved key with its path (the schema is checked against the asset, in resolveData)', () => {
    try {
      validateCustomMetadata({ data: { _service_a: 1, _serviceB: 2 }, data_schema_id: 9 }, 'custom_metadata');
      throw new Error('expected a validation error');
    } catch (e) {
      expect(e).toBeInstanceOf(AppError);
      expect((e as AppError).details).toEqual([
        { path: 'custom_metadata.data._service_a', message: expect.any(String) },
        { path: 'custom_metadata.data._serviceB', message: expect.any(String) },
      ]);
    }
  });

  it('counts the 2000-character limit on JSON.stringify(data)', () => {
    const at = { data: { k: 'x'.repeat(2000 - '{"k":""}'.length) } };
    expect(JSON.stringify(at.data).length).toBe(2000);
    expect(() => validateCustomMetadata(at, 'c')).not.toThrow();
    at.data.k += 'x';
    expect(() => validateCustomMetadata(at, 'c')).toThrow(expect.objectContaining({ kind: 'PAYLOAD_TOO_LARGE' }));
  });

  it('APPEND merges and REPLACE overwrites', () => {
    expect(applyCustomMetadata({ a: 1, b: 2 }, { data: { b: 3 }, mode: 'APPEND' })).toEqual({ a: 1, b: 3 });
    expect(applyCustomMetadata({ a: 1, b: 2 }, { data: { b: 3 }, mode: 'REPLACE' })).toEqual({ b: 3 });
  });
});

describe('schemas', () => {
  it('compiles draft 2020-12 schemas and refuses invalid ones with the reason', () => {
    expect(() => compileSchema({ type: 'object', properties: { a: { type: 'string' } } })).not.toThrow();
    expect(() => compileSchema(true)).not.toThrow();
    for (const bad of [{ type: 'nope' }, { properties: 5 }, { minLength: -1 }, [], 'x', null]) {
      expect(() => compileSchema(bad)).toThrow(expect.objectContaining({ kind: 'VALIDATION', code: 'VALIDATION_FAILED' }));
    }
  });

  it('lists every problem of the data, under data.<path>', () => {
    const schema = {
      ...defaultSchema(1),
      id: 5,
      schema: { type: 'object', properties: { n: { type: 'integer' }, s: { type: 'string', maxLength: 2 } }, required: ['r'] },
    };
    try {
      validateAgainst(schema, { n: 'x', s: 'long' });
      throw new Error('expected a validation error');
    } catch (e) {
      expect((e as AppError).details).toEqual(
        expect.arrayContaining([
          { path: 'data', message: expect.stringContaining('r') },
          { path: 'data.n', message: expect.stringContaining('integer') },
          { path: 'data.s', message: expect.stringContaining('2') },
        ]),
      );
    }
    expect(() => validateAgainst(defaultSchema(1), { service_search_txt: 'ok', other: 1 })).not.toThrow();
    expect(() => validateAgainst(defaultSchema(1), { service_search_txt: 5 })).toThrow();
  });
});

describe('contentDisposition', () => {
  it('quotes ASCII names and adds filename* for others', () => {
    expect(contentDisposition('attachment', 'a b.txt')).toBe('attachment; filename="a b.txt"');
    expect(contentDisposition('inline', 'ü.png')).toBe(`inline; filename="_.png"; filename*=UTF-8''%C3%BC.png`);
    expect(contentDisposition('attachment', 'x"y\\z')).toBe(`attachment; filename="x_y_z"; filename*=UTF-8''x%22y%5Cz`);
  });
});

describe('own object keys', () => {
  const id = 'a'.repeat(32);
  const sum = 'b'.repeat(32);
  it("accepts only the asset's own original and conversions of this version", () => {
    expect(isOwnOriginalKey(1, id, `originals/1/${id}`)).toBe(true);
    expect(isOwnOriginalKey(1, id, `originals/2/${id}`)).toBe(false);
    expect(isOwnOriginalKey(1, 'x/y', 'originals/1/x/y')).toBe(false);
    // A replacement next to the first original: 16 hex digits, nothing else.
    expect(isOwnOriginalKey(1, id, `originals/1/${id}-0123456789abcdef`)).toBe(true);
    expect(isOwnOriginalKey(1, id, `originals/1/${id}-0123456789ABCDEF`)).toBe(false);
    expect(isOwnOriginalKey(1, id, `originals/1/${id}-0123456789abcdef/x`)).toBe(false);
    expect(isOwnOriginalKey(1, id, `originals/1/${id}x`)).toBe(false);
    expect(isOwnConversionKey(1, id, sum, `conversions/1/${id}/${sum}/thumb.webp`)).toBe(true);
    expect(isOwnConversionKey(1, id, sum, `conversions/1/${id}/${sum}/hls-video/master.m3u8`)).toBe(true);
    expect(isOwnConversionKey(1, id, sum, `conversions/1/${id}/${'c'.repeat(32)}/thumb.webp`)).toBe(false);
    expect(isOwnConversionKey(1, id, sum, `conversions/1/${id}/${sum}/../../x`)).toBe(false);
    expect(isOwnConversionKey(1, id, sum, `conversions/1/${id}/${sum}/`)).toBe(false);
    expect(isOwnConversionKey(1, id, sum, `originals/1/${id}`)).toBe(false);
  });
});
