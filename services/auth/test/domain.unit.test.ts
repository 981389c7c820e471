import { generateServiceKey } from '@dam/auth-tokens';
import { addressKey } from '../src/domain/login-limiter';
import { hashPassword, verifyPassword } from '../src/domain/passwords';
import { apiKeyPrincipal } from '../src/domain/api-keys';
import { applySettingsPatch, defaultSettings, withDefaults } from '../src/domain/settings';
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

// The limiter's rules run against PostgreSQL, where its counts are kept: login-limiter.int.test.ts.
describe('addressKey', () => {
  it('counts an IPv6 client by its /64, and an IPv4-mapped address as the IPv4 one', () => {
    expect(addressKey('2001:db8:1:2:aaaa::1')).toBe('2001:db8:1:2::/64');
    expect(addressKey('[2001:DB8:1:2:bbbb:cccc:dddd:eeee]')).toBe('2001:db8:1:2::/64');
    expect(addressKey('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(addressKey('1::2:3:4:5:6:7')).toBe('1:0:2:3::/64');
    expect(addressKey('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
    expect(addressKey('::ffff:203.0.113.7')).toBe('203.0.113.7');
    expect(addressKey('203.0.113.7')).toBe('203.0.113.7');
    expect(addressKey('unknown')).toBe('unknown');
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
    expect(next.bulk_delete).toEqual({ max_assets: 5, max_range_days: 31, export: false });
    expect(d.bulk_delete.max_assets).toBe(1000);
    // Delete - Bulk's data export is asked for per group (off unless set); a record stored before it had the member reads it off.
    expect(applySettingsPatch(d, { bulk_delete: { export: true } }).bulk_delete).toEqual({ max_assets: 1000, max_range_days: 31, export: true });
    expect(withDefaults({ ...d, bulk_delete: { max_assets: 9, max_range_days: 3 } as typeof d.bulk_delete }).bulk_delete).toEqual({
      max_assets: 9,
      max_range_days: 3,
      export: false,
    });
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
    const prod = { ...base, NODE_ENV: 'production', ADMIN_EMAIL: 'ops@corp.test', ADMIN_PASSWORD: 'long-secret-pw' };
    expect(loadAuthConfig({ ...prod, TRUST_PROXY: 'none' }).PORT).toBe(8090);
    // Production says which proxies it is behind, if any (security review F1).
    expect(() => loadAuthConfig(prod)).toThrow(/TRUST_PROXY: must be set when NODE_ENV=production/);
    expect(loadAuthConfig(base).ADMIN_EMAIL).toBe('admin@example.com');
  });
});
