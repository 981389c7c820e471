import { createStorage, s3EndpointProblem, storageConfigFromEnv, type StorageConfig } from '../src';

/**
 * Kubernetes review D4: links for clients are presigned for the address clients reach (`publicEndpoint`, from
 * S3_PUBLIC_ENDPOINT); the suite's own presigned URLs (the gateway's downloads, ffprobe) stay on `endpoint`. Both
 * are made offline: nothing listens at either address here.
 */
const base: StorageConfig = { endpoint: 'http://127.0.0.1:1', accessKey: 'ak', secretKey: 'sk', bucket: 'dam-assets', region: 'us-east-1' };

describe('presigned URLs', () => {
  it('presignPublicGet signs for publicEndpoint, presignGet for endpoint, without asking a server', async () => {
    const storage = createStorage({ ...base, publicEndpoint: 'https://s3.dam.example.com' });
    const pub = new URL(await storage.presignPublicGet('1/a/original', 600, { responseContentDisposition: 'attachment; filename="a.txt"' }));
    expect(pub.origin).toBe('https://s3.dam.example.com');
    expect(pub.pathname).toBe('/dam-assets/1/a/original');
    expect(pub.searchParams.get('X-Amz-SignedHeaders')).toBe('host');
    expect(pub.searchParams.get('X-Amz-Credential')).toMatch(/^ak\/\d{8}\/us-east-1\/s3\/aws4_request$/);
    expect(pub.searchParams.get('response-content-disposition')).toBe('attachment; filename="a.txt"');
    expect((await storage.presignGet('1/a/original', 300)).startsWith('http://127.0.0.1:1/dam-assets/1/a/original?')).toBe(true);
  });

  it('without publicEndpoint both are signed for endpoint, as before', async () => {
    const storage = createStorage(base);
    expect(new URL(await storage.presignPublicGet('k', 60)).origin).toBe('http://127.0.0.1:1');
  });

  it('anonymous public URLs follow publicEndpoint unless publicUrl says otherwise', () => {
    expect(createStorage({ ...base, publicEndpoint: 'https://s3.dam.example.com' }).publicUrl('a b')).toBe('https://s3.dam.example.com/dam-assets/a%20b');
    expect(createStorage({ ...base, publicEndpoint: 'https://s3.dam.example.com', publicUrl: 'https://cdn.example.com/s3/' }).publicUrl('k')).toBe(
      'https://cdn.example.com/s3/dam-assets/k',
    );
    expect(createStorage(base).publicUrl('k')).toBe('http://127.0.0.1:1/dam-assets/k');
  });

  it('reads S3_PUBLIC_ENDPOINT from the environment and refuses an endpoint it could not sign for', async () => {
    const env = { S3_ENDPOINT: 'http://minio:9000', S3_ACCESS_KEY: 'ak', S3_SECRET_KEY: 'sk', S3_BUCKET: 'dam-assets', S3_REGION: 'eu-west-1' };
    const config = storageConfigFromEnv({ ...env, S3_PUBLIC_ENDPOINT: 'https://s3.dam.example.com' });
    expect(config.publicEndpoint).toBe('https://s3.dam.example.com');
    expect(new URL(await createStorage(config).presignPublicGet('k', 60)).searchParams.get('X-Amz-Credential')).toContain('/eu-west-1/');
    expect(storageConfigFromEnv(env).publicEndpoint).toBeUndefined();
    expect(() => createStorage({ ...base, publicEndpoint: 'https://s3.dam.example.com/dam' })).toThrow(/no path/);
    expect(s3EndpointProblem('minio:9000')).toBe('must be an http(s) URL');
    expect(s3EndpointProblem('http://minio:9000')).toBeUndefined();
  });
});
