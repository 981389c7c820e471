import { conversionKey, conversionsPrefix, originalKey, storageConfigFromEnv } from '../src';

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

describe('storageConfigFromEnv', () => {
  it('maps the S3 variables and keeps extras', () => {
    const env = { S3_ENDPOINT: 'http://127.0.0.1:7480', S3_ACCESS_KEY: 'a', S3_SECRET_KEY: 's', S3_BUCKET: 'b', S3_REGION: 'r' };
    expect(storageConfigFromEnv(env, { partSize: 5 })).toEqual({
      endpoint: 'http://127.0.0.1:7480',
      accessKey: 'a',
      secretKey: 's',
      bucket: 'b',
      region: 'r',
      partSize: 5,
    });
  });
});
