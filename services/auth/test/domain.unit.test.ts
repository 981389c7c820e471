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
  it('locks an email after max failures until the window ends', () => {
    let now = 0;
    const l = new LoginLimiter({ maxPerEmail: 2, maxPerAddress: 100, windowSeconds: 60 }, () => now);
    l.recordFailure('a', 'ip');
    expect(() => l.check('a', 'ip')).not.toThrow();
    l.recordFailure('a', 'ip');
    expect(() => l.check('a', 'ip')).toThrow(expect.objectContaining({ kind: 'RATE_LIMITED', headers: { 'Retry-After': '60' } }));
    expect(() => l.check('b', 'ip')).not.toThrow();
    now = 30_000;
    expect(() => l.check('a', 'ip')).toThrow(expect.objectContaining({ headers: { 'Retry-After': '30' } }));
    now = 60_000;
    expect(() => l.check('a', 'ip')).not.toThrow();
  });

  it('locks an address across emails', () => {
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
  const base = { DATABASE_URL: 'postgres://x/y', JWT_SECRET: 'j'.repeat(16), SERVICE_TRUSTED_KEYS: JSON.stringify({ keys: [gateway.publicJwk] }) };
  it('refuses the default admin in production', () => {
    expect(() => loadAuthConfig({ ...base, NODE_ENV: 'production' })).toThrow(/ADMIN_EMAIL and ADMIN_PASSWORD/);
    expect(loadAuthConfig({ ...base, NODE_ENV: 'production', ADMIN_EMAIL: 'ops@corp.test', ADMIN_PASSWORD: 'long-secret-pw' }).PORT).toBe(8090);
    expect(loadAuthConfig(base).ADMIN_EMAIL).toBe('admin@example.com');
  });
});
