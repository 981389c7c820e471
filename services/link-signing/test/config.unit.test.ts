import { generateServiceKey } from '@dam/auth-tokens';
import { ConfigError } from '@dam/config';
import { loadLinkSigningConfig } from '../src/config';

/** S3_PUBLIC_ENDPOINT (Kubernetes review D4) is checked at start-up, with every other variable. */
const key = generateServiceKey('link-signing', 'test');
const env = {
  S3_ACCESS_KEY: 'a',
  S3_SECRET_KEY: 'b',
  LINK_SIGNING_KEYS: 'ab'.repeat(32),
  SERVICE_KEY: JSON.stringify(key.privateJwk),
  SERVICE_TRUSTED_KEYS: JSON.stringify({ keys: [key.publicJwk] }),
};

const problemsOf = (extra: Record<string, string>): string[] => {
  try {
    loadLinkSigningConfig({ ...env, ...extra });
    return [];
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as ConfigError).problems;
  }
};

describe('link-signing config: S3_PUBLIC_ENDPOINT', () => {
  it('takes an absolute http(s) URL of scheme, host and port, and is absent by default', () => {
    expect(loadLinkSigningConfig(env).S3_PUBLIC_ENDPOINT).toBeUndefined();
    for (const ok of ['https://s3.dam.example.com', 'http://localhost:9000', 'https://s3.dam.example.com/']) {
      expect(problemsOf({ S3_PUBLIC_ENDPOINT: ok })).toEqual([]);
    }
    expect(loadLinkSigningConfig({ ...env, S3_PUBLIC_ENDPOINT: 'https://s3.dam.example.com' }).S3_PUBLIC_ENDPOINT).toBe('https://s3.dam.example.com');
  });

  it('refuses the start on a value no link could be signed for, in the one list of problems', () => {
    for (const bad of [
      's3.dam.example.com',
      'minio:9000',
      'ftp://s3.dam.example.com',
      'https://s3.dam.example.com/dam',
      'https://key:secret@s3.dam.example.com',
      'https://s3.dam.example.com/?x=1',
      '',
    ]) {
      expect(problemsOf({ S3_PUBLIC_ENDPOINT: bad })).toEqual([expect.stringMatching(/^S3_PUBLIC_ENDPOINT: /)]);
    }
    expect(
      problemsOf({ S3_PUBLIC_ENDPOINT: 'minio:9000', S3_ENDPOINT: 'not a url' })
        .map((p) => p.split(':')[0])
        .sort(),
    ).toEqual(['S3_ENDPOINT', 'S3_PUBLIC_ENDPOINT']);
  });
});
