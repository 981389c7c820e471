import { z } from 'zod';
import { jwtEnv, baseEnv, ConfigError, loadConfig, s3Env } from '../src';

const schema = z.object({ ...baseEnv(9000), ...s3Env, ...jwtEnv });

describe('loadConfig', () => {
  it('applies defaults and coerces numbers', () => {
    const cfg = loadConfig(schema, { S3_ACCESS_KEY: 'a', S3_SECRET_KEY: 'b', JWT_SECRET: 'x'.repeat(16), PORT: '1234' });
    expect(cfg).toMatchObject({ PORT: 1234, HOST: '127.0.0.1', S3_BUCKET: 'dam-assets', NODE_ENV: 'development' });
  });

  it('lists every bad variable in one error', () => {
    let error: unknown;
    try {
      loadConfig(schema, { PORT: 'http', JWT_SECRET: 'short', S3_ENDPOINT: 'not a url' });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const problems = (error as ConfigError).problems.map((p) => p.split(':')[0]).sort();
    expect(problems).toEqual(['JWT_SECRET', 'PORT', 'S3_ACCESS_KEY', 'S3_ENDPOINT', 'S3_SECRET_KEY']);
    expect((error as ConfigError).message).toContain('JWT_SECRET: must be at least 16 characters');
  });
});
