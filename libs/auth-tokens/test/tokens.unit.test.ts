import jwt from 'jsonwebtoken';
import { generateApiKey, hashApiKey, signJwt, verifyJwt } from '../src';

const SECRET = 'test-secret-0123456789';

describe('JWT', () => {
  it('signs and verifies', () => {
    const { token, expiresAt } = signJwt({ sub: 5, gid: 2, role: 3 }, SECRET, 3600);
    const claims = verifyJwt(token, SECRET);
    expect(claims).toMatchObject({ sub: 5, gid: 2, role: 3 });
    expect(typeof claims.jti).toBe('string');
    expect(claims.exp * 1000).toBe(expiresAt.getTime());
    expect(jwt.decode(token, { complete: true })?.header.alg).toBe('HS256');
  });

  it('gives every token its own jti', () => {
    const a = verifyJwt(signJwt({ sub: 1, gid: 1, role: 1 }, SECRET, 60).token, SECRET);
    const b = verifyJwt(signJwt({ sub: 1, gid: 1, role: 1 }, SECRET, 60).token, SECRET);
    expect(a.jti).not.toBe(b.jti);
  });

  it('carries the token epoch as `ep`; a token without it (or with a nonsense one) is epoch 0', () => {
    const withEp = signJwt({ sub: 5, gid: 2, role: 3, ep: 7 }, SECRET, 60).token;
    expect(jwt.decode(withEp)).toMatchObject({ ep: 7 });
    expect(verifyJwt(withEp, SECRET).ep).toBe(7);
    expect(verifyJwt(signJwt({ sub: 5, gid: 2, role: 3 }, SECRET, 60).token, SECRET).ep).toBe(0);
    const exp = Math.floor(Date.now() / 1000) + 60;
    for (const ep of [undefined, -1, 1.5, '3']) {
      const token = jwt.sign({ sub: '5', gid: 2, role: 3, jti: 'x', exp, ...(ep === undefined ? {} : { ep }) }, SECRET);
      expect(verifyJwt(token, SECRET).ep).toBe(0);
    }
  });

  it('rejects an expired token', () => {
    const token = jwt.sign({ sub: '1', gid: 1, role: 1, jti: 'x', exp: Math.floor(Date.now() / 1000) - 10 }, SECRET);
    expect(() => verifyJwt(token, SECRET)).toThrow(expect.objectContaining({ kind: 'UNAUTHENTICATED', code: 'TOKEN_EXPIRED' }));
  });

  it('rejects a tampered token and a wrong secret', () => {
    const { token } = signJwt({ sub: 1, gid: 1, role: 4 }, SECRET, 60);
    const [h, , s] = token.split('.');
    const payload = Buffer.from(JSON.stringify({ sub: '1', gid: 1, role: 1, jti: 'x', exp: 9999999999 })).toString('base64url');
    expect(() => verifyJwt(`${h}.${payload}.${s}`, SECRET)).toThrow(expect.objectContaining({ kind: 'UNAUTHENTICATED' }));
    expect(() => verifyJwt(token, 'another-secret-0123456')).toThrow(expect.objectContaining({ kind: 'UNAUTHENTICATED' }));
    expect(() => verifyJwt('garbage', SECRET)).toThrow(expect.objectContaining({ kind: 'UNAUTHENTICATED' }));
  });

  it('rejects alg none and tokens without our claims', () => {
    const none = jwt.sign({ sub: '1', gid: 1, role: 1, jti: 'x' }, '', { algorithm: 'none' });
    expect(() => verifyJwt(none, SECRET)).toThrow(expect.objectContaining({ kind: 'UNAUTHENTICATED' }));
    const noGid = jwt.sign({ sub: '1', role: 1, jti: 'x' }, SECRET, { expiresIn: 60 });
    expect(() => verifyJwt(noGid, SECRET)).toThrow(expect.objectContaining({ kind: 'UNAUTHENTICATED' }));
  });
});

describe('API keys', () => {
  it('are random, prefixed and hashed with sha256 hex', () => {
    const a = generateApiKey();
    const b = generateApiKey();
    expect(a).toMatch(/^dam_[A-Za-z0-9_-]{40,}$/);
    expect(a).not.toBe(b);
    expect(hashApiKey(a)).toMatch(/^[0-9a-f]{64}$/);
    expect(hashApiKey(a)).toBe(hashApiKey(a));
    expect(hashApiKey(a)).not.toBe(hashApiKey(b));
  });
});
