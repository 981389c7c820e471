import { generateServiceKey } from '@dam/auth-tokens';
import { LoginLimiter, addressKey } from '../src/domain/login-limiter';
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
  // An admitted attempt counts as a failure unless it is settled otherwise.
  const fail = (l: LoginLimiter, email: string, address: string) => void l.begin(email, address);
  const tryIt = (l: LoginLimiter, email: string, address: string) => () => l.begin(email, address).abandoned();

  it('delays one (email, address) progressively after the free failures, and never blocks another address', () => {
    let now = 0;
    const l = new LoginLimiter({ maxPerEmail: 100, maxPerAddress: 100, windowSeconds: 60, freeFailures: 2, maxDelaySeconds: 8 }, () => now);
    fail(l, 'a', 'attacker');
    expect(tryIt(l, 'a', 'attacker')).not.toThrow();
    fail(l, 'a', 'attacker'); // the second: the next attempt waits 1 s
    expect(tryIt(l, 'a', 'attacker')).toThrow(expect.objectContaining({ kind: 'RATE_LIMITED', headers: { 'Retry-After': '1' } }));
    expect(tryIt(l, 'a', 'owner')).not.toThrow();
    const waitAfterFailing = (): string => {
      fail(l, 'a', 'attacker');
      try {
        l.begin('a', 'attacker').abandoned();
        return 'admitted';
      } catch (err) {
        return (err as { headers: Record<string, string> }).headers['Retry-After'] ?? '';
      }
    };
    const waits: string[] = [];
    for (let i = 0; i < 5; i += 1) {
      now += Number(waits.at(-1) ?? 1) * 1000; // exactly when the pair may try again
      waits.push(waitAfterFailing());
    }
    // 2 s, 4 s, 8 s, then the cap.
    expect(waits).toEqual(['2', '4', '8', '8', '8']);
    expect(tryIt(l, 'a', 'owner')).not.toThrow();
    // The owner's success does not clear the attacker's pair.
    l.begin('a', 'owner').succeeded();
    expect(tryIt(l, 'a', 'attacker')).toThrow();
    now += 8000;
    expect(tryIt(l, 'a', 'attacker')).not.toThrow();
  });

  it('counts an attempt from its start, so a burst in parallel gets no more tries than one after another', () => {
    const l = new LoginLimiter({ maxPerEmail: 100, maxPerAddress: 100, windowSeconds: 60, freeFailures: 3 });
    const admitted: number[] = [];
    for (let i = 0; i < 10; i += 1) {
      try {
        l.begin('a', 'burst'); // none of them settled yet: the passwords are still being checked
        admitted.push(i);
      } catch {
        // refused
      }
    }
    expect(admitted).toEqual([0, 1, 2]);
  });

  // Past a bound an attempt is admitted, held, and a wrong password then answers 429 (never a right one).
  const held = (l: LoginLimiter, email: string, address: string): number => {
    const attempt = l.begin(email, address);
    attempt.abandoned();
    return attempt.holdMs;
  };

  it('a right password or an attempt without a verdict counts for nothing', () => {
    const l = new LoginLimiter({ maxPerEmail: 100, maxPerAddress: 3, windowSeconds: 60, freeFailures: 2, boundDelayMs: 1500 });
    fail(l, 'a', 'ip');
    for (let i = 0; i < 5; i += 1) l.begin('a', 'ip').succeeded();
    for (let i = 0; i < 5; i += 1) l.begin('b', 'ip').abandoned();
    fail(l, 'c', 'ip');
    expect(held(l, 'd', 'ip')).toBe(0);
    fail(l, 'd', 'ip');
    expect(held(l, 'e', 'ip')).toBe(1500);
  });

  it('past the bound of one email over all addresses, holds its attempts and fails a wrong one with 429', () => {
    let now = 0;
    const l = new LoginLimiter({ maxPerEmail: 5, maxPerAddress: 100, windowSeconds: 60 }, () => now);
    for (let i = 0; i < 5; i += 1) fail(l, 'a', `10.0.0.${i}`);
    now += 20_000;
    const wrong = l.begin('a', 'elsewhere');
    expect(wrong.holdMs).toBe(2000);
    expect(wrong.failed()).toEqual(expect.objectContaining({ kind: 'RATE_LIMITED', headers: { 'Retry-After': '40' } }));
    const right = l.begin('a', 'another');
    expect(right.holdMs).toBe(2000);
    expect(() => right.succeeded()).not.toThrow();
    expect(held(l, 'b', 'elsewhere')).toBe(0);
    // Below the bound a wrong password is a plain 401: no error from the limiter.
    expect(l.begin('b', 'elsewhere').failed()).toBeUndefined();
    now += 40_000;
    expect(held(l, 'a', 'yet-another')).toBe(0);
  });

  it('past the bound of an address across emails, holds its attempts', () => {
    const l = new LoginLimiter({ maxPerEmail: 100, maxPerAddress: 3, windowSeconds: 60 });
    ['a', 'b', 'c'].forEach((e) => fail(l, e, 'ip'));
    expect(held(l, 'z', 'ip')).toBe(2000);
    expect(l.begin('z', 'ip').failed()).toEqual(expect.objectContaining({ kind: 'RATE_LIMITED' }));
    expect(held(l, 'z', 'other')).toBe(0);
  });

  it('counts an IPv6 client by its /64, and an IPv4-mapped address as the IPv4 one', () => {
    expect(addressKey('2001:db8:1:2:aaaa::1')).toBe('2001:db8:1:2::/64');
    expect(addressKey('[2001:DB8:1:2:bbbb:cccc:dddd:eeee]')).toBe('2001:db8:1:2::/64');
    expect(addressKey('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(addressKey('1::2:3:4:5:6:7')).toBe('1:0:2:3::/64');
    expect(addressKey('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
    expect(addressKey('::ffff:203.0.113.7')).toBe('203.0.113.7');
    expect(addressKey('203.0.113.7')).toBe('203.0.113.7');
    expect(addressKey('unknown')).toBe('unknown');
    const l = new LoginLimiter({ maxPerEmail: 100, maxPerAddress: 100, windowSeconds: 60, freeFailures: 1 });
    fail(l, 'a', '2001:db8:1:2::1');
    expect(tryIt(l, 'a', '2001:db8:1:2::2')).toThrow(expect.objectContaining({ kind: 'RATE_LIMITED' }));
    expect(tryIt(l, 'a', '2001:db8:1:3::1')).not.toThrow();
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
    const prod = { ...base, NODE_ENV: 'production', ADMIN_EMAIL: 'ops@corp.test', ADMIN_PASSWORD: 'long-secret-pw' };
    expect(loadAuthConfig({ ...prod, TRUST_PROXY: 'none' }).PORT).toBe(8090);
    // Production says which proxies it is behind, if any (security review F1).
    expect(() => loadAuthConfig(prod)).toThrow(/TRUST_PROXY: must be set when NODE_ENV=production/);
    expect(loadAuthConfig(base).ADMIN_EMAIL).toBe('admin@example.com');
  });
});
