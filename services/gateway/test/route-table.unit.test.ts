import { PERMISSIONS } from '@dam/auth-tokens';
import { pathSegments, resolveRoute, ROUTES } from '../src/domain/route-table';

const allowed = (role: keyof typeof PERMISSIONS, method: string, path: string): boolean => {
  const m = resolveRoute(method, path);
  if (!m) throw new Error(`no route for ${method} ${path}`);
  return m.rule.anyOf.length === 0 || m.rule.anyOf.some((t) => PERMISSIONS[role].includes(t as never));
};

const ID = 'a'.repeat(32);

describe('route table', () => {
  it.each([
    ['POST', '/api/v1/login', 'auth', true],
    ['GET', '/api/v1/auth/validate', 'auth', true],
    ['POST', '/api/v1/auth/validate', 'auth', true],
    ['GET', '/api/v1/users', 'auth', false],
    ['GET', '/api/v1/users/me', 'auth', false],
    ['DELETE', '/api/v1/api_keys/k1', 'auth', false],
    ['PATCH', '/api/v1/settings', 'auth', false],
    ['GET', `/api/v1/assets/${ID}/data`, 'metadata', false],
    ['GET', `/api/v1/assets/${ID}/content/original/download`, 'metadata', false],
    ['GET', `/api/v1/assets/${ID}/content/hls-video/720p/seg-001.ts`, 'metadata', false],
    ['POST', '/api/v1/assets/search', 'search', false],
    ['GET', `/api/v1/assets/${ID}/get_link`, 'link-signing', false],
    ['DELETE', '/api/v1/assets/trash/purge', 'metadata', false],
  ])('%s %s → %s', (method, path, upstream, isPublic) => {
    const m = resolveRoute(method, path);
    expect(m?.rule.upstream).toBe(upstream);
    expect(Boolean(m?.rule.public)).toBe(isPublic);
  });

  it('unknown paths and methods resolve to nothing', () => {
    expect(resolveRoute('GET', '/api/v1/nope')).toBeUndefined();
    expect(resolveRoute('GET', '/api/v1/login')).toBeUndefined();
    expect(resolveRoute('PUT', '/api/v1/users/me')).toBeUndefined();
    expect(resolveRoute('GET', '/api/v2/users')).toBeUndefined();
  });

  it('refuses paths the upstream could read differently', () => {
    expect(pathSegments('/api/v1/users/../settings')).toBeUndefined();
    expect(pathSegments('/api/v1/users/%2e%2e/settings')).toBeUndefined();
    expect(pathSegments('/api/v1//users')).toBeUndefined();
    expect(pathSegments('/api/v1/assets/x%2Fy/data')).toBeUndefined();
    expect(pathSegments('/api/v1/users/')).toEqual(['api', 'v1', 'users']);
    expect(resolveRoute('GET', `/api/v1/assets/${ID}/../x/data`)).toBeUndefined();
  });

  it('applies the role table (CONTRACT §2)', () => {
    expect(allowed('CREATOR', 'GET', `/api/v1/assets/${ID}/data`)).toBe(true);
    expect(allowed('CREATOR', 'GET', `/api/v1/assets/${ID}/content/original/download`)).toBe(true);
    expect(allowed('CREATOR', 'POST', '/api/v1/assets/search')).toBe(true);
    expect(allowed('CREATOR', 'GET', '/api/v1/users')).toBe(false);
    expect(allowed('CREATOR', 'POST', '/api/v1/users')).toBe(false);
    expect(allowed('CREATOR', 'GET', '/api/v1/users/me')).toBe(true);
    expect(allowed('CREATOR', 'POST', `/api/v1/assets/${ID}/data/update`)).toBe(false);
    expect(allowed('USER', 'POST', `/api/v1/assets/${ID}/data/update`)).toBe(true);
    expect(allowed('USER', 'POST', `/api/v1/assets/${ID}/delete`)).toBe(true);
    expect(allowed('MANAGER', 'DELETE', '/api/v1/assets/trash/purge')).toBe(false);
    expect(allowed('ADMIN', 'DELETE', '/api/v1/assets/trash/purge')).toBe(true);
    expect(allowed('MANAGER', 'GET', '/api/v1/settings')).toBe(false);
    expect(allowed('ADMIN', 'PATCH', '/api/v1/settings')).toBe(true);
    expect(allowed('USER', 'POST', '/api/v1/schemas')).toBe(false);
    expect(allowed('MANAGER', 'POST', '/api/v1/schemas')).toBe(true);
  });

  it('every rule names a real upstream and well-formed pattern', () => {
    for (const r of ROUTES) {
      expect(r.pattern.startsWith('/api/v1/')).toBe(true);
      expect(r.methods.length).toBeGreaterThan(0);
    }
  });
});
