import { z } from 'zod';
import { jwtEnv, baseEnv, ConfigError, dbEnv, loadConfig, natsEnv, s3Env } from '../src';

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

describe('JWT_PREVIOUS_SECRET (overlap rotation)', () => {
  const vars = { S3_ACCESS_KEY: 'a', S3_SECRET_KEY: 'b', JWT_SECRET: 'x'.repeat(16) };

  it('is optional, empty means none (the secrets tool empties the key it cannot remove), short is refused', () => {
    expect(loadConfig(schema, vars).JWT_PREVIOUS_SECRET).toBeUndefined();
    expect(loadConfig(schema, { ...vars, JWT_PREVIOUS_SECRET: '' }).JWT_PREVIOUS_SECRET).toBeUndefined();
    expect(loadConfig(schema, { ...vars, JWT_PREVIOUS_SECRET: 'p'.repeat(16) }).JWT_PREVIOUS_SECRET).toBe('p'.repeat(16));
    expect(() => loadConfig(schema, { ...vars, JWT_PREVIOUS_SECRET: 'short' })).toThrow(/JWT_PREVIOUS_SECRET: must be at least 16 characters/);
  });
});

describe('TRUST_PROXY at start-up', () => {
  const vars = { S3_ACCESS_KEY: 'a', S3_SECRET_KEY: 'b', JWT_SECRET: 'x'.repeat(16) };
  const problemsOf = (env: NodeJS.ProcessEnv): string[] => {
    try {
      loadConfig(schema, env);
      return [];
    } catch (e) {
      expect(e).toBeInstanceOf(ConfigError);
      return (e as ConfigError).problems;
    }
  };

  it('refuses production without TRUST_PROXY (unset or empty), in the one list of problems', () => {
    for (const unset of [{}, { TRUST_PROXY: '' }, { TRUST_PROXY: '  ' }]) {
      expect(problemsOf({ ...vars, NODE_ENV: 'production', ...unset })).toEqual([
        expect.stringMatching(/^TRUST_PROXY: must be set when NODE_ENV=production.*`none`/),
      ]);
    }
    // Listed beside the schema's problems, not instead of them.
    const both = problemsOf({ NODE_ENV: 'production', ...vars, JWT_SECRET: 'short' }).map((p) => p.split(':')[0]);
    expect(both).toEqual(['JWT_SECRET', 'TRUST_PROXY']);
  });

  it('starts production with any explicit value, `none` (no proxy: the peer is the client) included', () => {
    for (const value of ['none', 'false', '0', '1', '10.0.0.0/8, loopback']) {
      expect(problemsOf({ ...vars, NODE_ENV: 'production', TRUST_PROXY: value })).toEqual([]);
    }
  });

  it('keeps unset meaning none outside production, and refuses `true` anywhere', () => {
    expect(problemsOf({ ...vars, NODE_ENV: 'development' })).toEqual([]);
    expect(problemsOf({ ...vars, NODE_ENV: 'test', TRUST_PROXY: '' })).toEqual([]);
    expect(problemsOf({ ...vars, TRUST_PROXY: 'true' })).toEqual([expect.stringMatching(/^TRUST_PROXY: .*hop count/)]);
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

describe('dbEnv', () => {
  const db = z.object(dbEnv);
  const url = 'postgres://dam@db:5432/dam?sslmode=verify-full&sslrootcert=/etc/dam/db-ca/ca.crt';

  it('sizes the pool at 10 unless DB_POOL_MAX says otherwise (1-100)', () => {
    expect(loadConfig(db, { DATABASE_URL: url })).toEqual({ DATABASE_URL: url, DB_POOL_MAX: 10 });
    expect(loadConfig(db, { DATABASE_URL: url, DB_POOL_MAX: '3' }).DB_POOL_MAX).toBe(3);
    expect(loadConfig(db, { DATABASE_URL: url, DB_POOL_MAX: '100' }).DB_POOL_MAX).toBe(100);
  });

  it('refuses a DB_POOL_MAX that is not a whole number from 1 to 100, saying so', () => {
    for (const bad of ['0', '-1', '101', '2.5', 'ten', '']) {
      let error: unknown;
      try {
        loadConfig(db, { DATABASE_URL: url, DB_POOL_MAX: bad });
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).problems).toEqual(['DB_POOL_MAX: must be a whole number from 1 to 100 (connections of this process to PostgreSQL)']);
    }
  });
});
