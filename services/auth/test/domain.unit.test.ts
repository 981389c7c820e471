import { generateServiceKey } from '@dam/auth-tokens';
import { LoginLimiter } from '../src/domain/login-limiter';
import { hashPassword, verifyPassword } from '../src/domain/passwords';
import { apiKeyPrincipal } from '../src/domain/api-keys';
import { applySettingsPatch, defaultSettings } from '../src/domain/settings';
import { loadAuthConfig } from '../src/config';

describe('passwords', () => {
  it('hashes as scrypt$N$r$p$salt$hash and verifies', async () => {
    const h = await hashPassword('correct horse');
    expect(h).toMatch(/^scrypt\$16384\$8\$1\$[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+$/);
    expect(await verifyPassword('correct horse', h)).toBe(true);
    expect(await verifyPassword('correct horsE', h)).toBe(false);
    expect(await hashPassword('correct horse')).not.toBe(h);
    expect(await verifyPassword('x', 'garbage')).toBe(false);
  });
});

describe('LoginLimiter', () => {
  it('delays one (email, address) progressively after the free failures, and never blocks another address', () => {
    let now = 0;
    const l = new LoginLimiter({ maxPerEmail: 100, maxPerAddress: 100, windowSeconds: 60, freeFailures: 2, maxDelaySeconds: 8 }, () => now);
    l.recordFailure('a', 'attacker');
    expect(() => l.check('a', 'attacker')).not.toThrow();
    l.recordFailure('a', 'attacker'); // the second: the next attempt waits 1 s
    expect(() => l.check('a', 'attacker')).toThrow(expect.objectContaining({ kind: 'RATE_LIMITED', headers: { 'Retry-After': '1' } }));
    expect(() => l.check('a', 'owner')).not.toThrow();
    now = 1000;
    l.recordFailure('a', 'attacker'); // 2 s
    l.recordFailure('a', 'attacker'); // 4 s
    l.recordFailure('a', 'attacker'); // 8 s (the cap)
    l.recordFailure('a', 'attacker'); // still 8 s
    expect(() => l.check('a', 'attacker')).toThrow(expect.objectContaining({ headers: { 'Retry-After': '8' } }));
    expect(() => l.check('a', 'owner')).not.toThrow();
    // The owner's success does not clear the attacker's pair.
    l.recordSuccess('a', 'owner');
    expect(() => l.check('a', 'attacker')).toThrow();
    now = 9000;
    expect(() => l.check('a', 'attacker')).not.toThrow();
  });

  it('bounds one email over all addresses, loosely', () => {
    const l = new LoginLimiter({ maxPerEmail: 5, maxPerAddress: 100, windowSeconds: 60 });
    for (let i = 0; i < 5; i += 1) l.recordFailure('a', `ip${i}`);
    expect(() => l.check('a', 'elsewhere')).toThrow(expect.objectContaining({ kind: 'RATE_LIMITED' }));
    expect(() => l.check('b', 'elsewhere')).not.toThrow();
  });

  it('bounds an address across emails', () => {
    const l = new LoginLimiter({ maxPerEmail: 100, maxPerAddress: 3, windowSeconds: 60 });
    ['a', 'b', 'c'].forEach((e) => l.recordFailure(e, 'ip'));
    expect(() => l.check('z', 'ip')).toThrow(expect.objectContaining({ kind: 'RATE_LIMITED' }));
    expect(() => l.check('z', 'other')).not.toThrow();
  });
});

describe('apiKeyPrincipal', () => {
  const key = { id: 'k', group_id: 2, user_id: 5, name: 'n', created_at: new Date() };
  it('limits a key to both its role and the creator’s current role', () => {
    expect(apiKeyPrincipal({ ...key, role: 'ADMIN' }, 3)).toMatchObject({ role_id: 3, role_name: 'USER' });
    expect(apiKeyPrincipal({ ...key, role: 'ADMIN' }, 3).permissions).not.toContain('MANAGE_USERS');
    expect(apiKeyPrincipal({ ...key, role: 'ASSET_ADMIN' }, 2).permissions).not.toContain('REISSUE_CALLBACKS');
    expect(apiKeyPrincipal({ ...key, role: 'ASSET_ADMIN' }, 1).permissions).toContain('REISSUE_CALLBACKS');
  });
});

describe('settings', () => {
  it('defaults and patch semantics', () => {
    const d = defaultSettings();
    expect(d.webhooks.secret).toMatch(/^whsec_/);
    expect(Buffer.from(d.webhooks.secret.slice(6), 'base64')).toHaveLength(24);
    const next = applySettingsPatch(d, { bulk_delete: { max_assets: 5 } });
    expect(next.bulk_delete).toEqual({ max_assets: 5, max_range_days: 31 });
    expect(d.bulk_delete.max_assets).toBe(1000);
    expect(() => applySettingsPatch(d, { conversions: { custom: {} } })).toThrow(expect.objectContaining({ kind: 'VALIDATION' }));
  });
});

describe('config', () => {
  const gateway = generateServiceKey('gateway');
  const own = generateServiceKey('auth');
  const base = {
    DATABASE_URL: 'postgres://x/y',
    JWT_SECRET: 'j'.repeat(16),
    SERVICE_TRUSTED_KEYS: JSON.stringify({ keys: [gateway.publicJwk] }),
    SERVICE_KEY: JSON.stringify(own.privateJwk),
  };
  it('refuses the default admin in production', () => {
    expect(() => loadAuthConfig({ ...base, NODE_ENV: 'production' })).toThrow(/ADMIN_EMAIL and ADMIN_PASSWORD/);
    expect(loadAuthConfig({ ...base, NODE_ENV: 'production', ADMIN_EMAIL: 'ops@corp.test', ADMIN_PASSWORD: 'long-secret-pw' }).PORT).toBe(8090);
    expect(loadAuthConfig(base).ADMIN_EMAIL).toBe('admin@example.com');
  });
});
