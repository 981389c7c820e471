import { conversionKey, conversionsPrefix, originalKey } from '../src';

describe('object keys', () => {
  it('follows the documented layout', () => {
    expect(originalKey('g', 'a')).toBe('originals/g/a');
    expect(conversionKey('g', 'a', 'md5', 'smart_imaging', 'jpg')).toBe('conversions/g/a/md5/smart_imaging.jpg');
    expect(conversionKey('g', 'a', 'md5', 'deepzoom', '')).toBe('conversions/g/a/md5/deepzoom');
    expect(conversionsPrefix('g', 'a')).toBe('conversions/g/a/');
    expect(conversionsPrefix('g', 'a', 'md5')).toBe('conversions/g/a/md5/');
  });
  it.each([['a/b'], [''], ['..']])('refuses %p as a key segment', (bad) => {
    expect(() => originalKey(bad, 'a')).toThrow();
    expect(() => conversionKey('g', bad, 'c', 'k', 'jpg')).toThrow();
  });
});
