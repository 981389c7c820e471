import { z } from 'zod';
import { jwtEnv, baseEnv, ConfigError, loadConfig, natsEnv, s3Env } from '../src';

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

describe('natsEnv', () => {
  const nats = z.object(natsEnv);

  it('takes one server or a comma-separated list, and 1 stream replica unless told', () => {
    expect(loadConfig(nats, {})).toEqual({ NATS_URL: 'nats://127.0.0.1:4222', NATS_STREAM_REPLICAS: 1 });
    const cluster = loadConfig(nats, { NATS_URL: 'nats://a:4222,nats://b:4222, nats://c:4222', NATS_STREAM_REPLICAS: '3' });
    expect(cluster).toEqual({ NATS_URL: 'nats://a:4222,nats://b:4222, nats://c:4222', NATS_STREAM_REPLICAS: 3 });
  });

  it('refuses an empty server in the list and replicas outside 1-5', () => {
    let error: unknown;
    try {
      loadConfig(nats, { NATS_URL: 'nats://a:4222,,nats://b:4222', NATS_STREAM_REPLICAS: '6' });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems.map((p) => p.split(':')[0]).sort()).toEqual(['NATS_STREAM_REPLICAS', 'NATS_URL']);
    expect(() => loadConfig(nats, { NATS_STREAM_REPLICAS: '0' })).toThrow(ConfigError);
    expect(() => loadConfig(nats, { NATS_STREAM_REPLICAS: '2.5' })).toThrow(ConfigError);
  });
});
