import { createDatabase, scaled, startServiceProcess } from '@dam/testing';
import { JWT_SECRET, identities } from './harness';

// Process starts take seconds on a 2-core machine.
jest.setTimeout(scaled(60_000));

const env = (databaseUrl: string) => ({
  DATABASE_URL: databaseUrl,
  JWT_SECRET,
  ...identities.env('auth'),
  OTEL_SDK_DISABLED: 'true',
});

describe('auth main.ts', () => {
  it('migrates, bootstraps, serves and drains on SIGTERM; a second start does not bootstrap again', async () => {
    const db = await createDatabase('auth_main');
    const first = await startServiceProcess('auth', env(db));
    try {
      const body = JSON.stringify({ email: 'admin@example.com', password: 'admin-password' });
      const res = await fetch(`${first.url}/api/v1/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...identities.headers('gateway', { audience: 'auth', method: 'POST', path: '/api/v1/login', body }) },
        body,
      });
      expect(res.status).toBe(200);
      expect(first.logs().some((l) => l.includes('created group 1'))).toBe(true);
    } finally {
      await first.stop();
    }
    expect(await first.exited).toEqual({ code: 0, signal: null });
    const second = await startServiceProcess('auth', env(db));
    await second.stop();
    expect(second.logs().some((l) => l.includes('created group 1'))).toBe(false);
  });

  it('refuses to start in production with the default admin credentials', async () => {
    const p = await startServiceProcess('auth', { ...env(await createDatabase('auth_prod')), NODE_ENV: 'production' }, { waitReady: false });
    expect((await p.exited).code).toBe(1);
    expect(p.logs().join('\n')).toMatch(/ADMIN_EMAIL and ADMIN_PASSWORD must be set/);
    // In the same one list: production must say which proxies it is behind, or `none` (security review F1).
    expect(p.logs().join('\n')).toMatch(/Invalid configuration:[\s\S]*TRUST_PROXY: must be set when NODE_ENV=production/);
  });
});
