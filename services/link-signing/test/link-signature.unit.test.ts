import { randomBytes } from 'node:crypto';
import { accessSecret, CDN_MAX_EXPIRY, cdnUrl, resolveExpiry, signLink, verifyLink, type LinkParams } from '../src/domain/link-signature';
import { resolveInFolder, rewritePlaylist } from '../src/domain/playlist';
import { linkOf } from '../src/domain/link-signature';

const id = 'a'.repeat(32);
const params: LinkParams = { key: 'original', expiry: 1_900_000_000, delivery: 'download', accessId: 'f'.repeat(32) };

describe('link signatures', () => {
  const key = randomBytes(32);
  const secret = accessSecret(key, params.accessId);
  const signature = signLink(secret, id, params);

  it('verifies what it signed, with either of two active keys', () => {
    expect(signature).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(verifyLink([secret], id, params, signature)).toBe(true);
    const next = accessSecret(randomBytes(32), params.accessId);
    expect(verifyLink([next, secret], id, params, signature)).toBe(true);
    expect(verifyLink([next], id, params, signature)).toBe(false);
  });

  it('refuses any parameter changed, another asset, another accessID secret, or a malformed signature', () => {
    const changes: Array<Partial<LinkParams>> = [{ key: 'thumb' }, { expiry: params.expiry + 1 }, { delivery: 'display' }, { accessId: 'e'.repeat(32) }];
    for (const c of changes) expect(verifyLink([secret], id, { ...params, ...c }, signature)).toBe(false);
    expect(verifyLink([secret], 'b'.repeat(32), params, signature)).toBe(false);
    expect(verifyLink([accessSecret(key, 'e'.repeat(32))], id, params, signature)).toBe(false);
    expect(verifyLink([secret], id, params, `${signature}=`)).toBe(false);
    // The unused low bits of the last character: another spelling of the same bytes is refused too.
    const last = signature.at(-1) as string;
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const sibling = alphabet[alphabet.indexOf(last) ^ 1] as string;
    expect(verifyLink([secret], id, params, `${signature.slice(0, -1)}${sibling}`)).toBe(false);
    expect(verifyLink([secret], id, params, '')).toBe(false);
  });

  it('writes the URL in the specified shape and order', () => {
    expect(cdnUrl('http://cdn.example/', id, params, signature)).toBe(
      `http://cdn.example/api/v1/files/content/${id}?key=original&expiry=1900000000&delivery=download&accessId=${'f'.repeat(32)}&signature=${signature}`,
    );
    expect(cdnUrl('http://cdn.example', id, { ...params, key: 'hls-video' }, signature, '720p/index.m3u8')).toMatch(
      new RegExp(`/content/${id}/720p/index\\.m3u8\\?key=hls-video&`),
    );
  });
});

describe('expiry', () => {
  const now = 1_800_000_000;
  it('adds seconds, caps MAX per link type, and refuses what is over the maximum or not a number', () => {
    expect(resolveExpiry('3600', 'cdn', now)).toEqual({ ok: true, expiry: now + 3600 });
    expect(resolveExpiry('MAX', 'cdn', now)).toEqual({ ok: true, expiry: CDN_MAX_EXPIRY });
    expect(resolveExpiry('MAX', 'object_storage', now)).toEqual({ ok: true, expiry: now + 604800 });
    expect(resolveExpiry('604800', 'object_storage', now)).toEqual({ ok: true, expiry: now + 604800 });
    expect(resolveExpiry('604801', 'object_storage', now).ok).toBe(false);
    expect(resolveExpiry(String(CDN_MAX_EXPIRY - now + 1), 'cdn', now).ok).toBe(false);
    for (const bad of ['0', '-5', '1.5', 'soon', '', 'max']) expect(resolveExpiry(bad, 'cdn', now).ok).toBe(false);
  });
});

describe('playlists', () => {
  it('resolves entries inside the folder only', () => {
    expect(resolveInFolder('master.m3u8', '720p/index.m3u8')).toBe('720p/index.m3u8');
    expect(resolveInFolder('720p/index.m3u8', 'seg_001.ts')).toBe('720p/seg_001.ts');
    expect(resolveInFolder('720p/index.m3u8', '../360p/index.m3u8')).toBe('360p/index.m3u8');
    expect(resolveInFolder('master.m3u8', '../../etc/passwd')).toBeUndefined();
    expect(resolveInFolder('master.m3u8', 'https://elsewhere/x.ts')).toBeUndefined();
    expect(resolveInFolder('master.m3u8', '/abs.ts')).toBeUndefined();
  });

  it('turns every entry and URI attribute into a URL of its own and drops what leaves the folder', () => {
    const text = [
      '#EXTM3U',
      '#EXT-X-MAP:URI="init.mp4"',
      '#EXT-X-STREAM-INF:BANDWIDTH=800000,RESOLUTION=640x360',
      '360p/index.m3u8',
      '',
      '../outside.m3u8',
      '#EXT-X-ENDLIST',
    ].join('\n');
    const out = rewritePlaylist(text, 'master.m3u8', (f) => `https://cdn/${f}?sig`);
    expect(out.split('\n')).toEqual([
      '#EXTM3U',
      '#EXT-X-MAP:URI="https://cdn/init.mp4?sig"',
      '#EXT-X-STREAM-INF:BANDWIDTH=800000,RESOLUTION=640x360',
      'https://cdn/360p/index.m3u8?sig',
      '',
      '#EXT-X-ENDLIST',
    ]);
  });
});

describe('a link as the edge reads it', () => {
  const query = (expiry: string) => ({ key: 'original', expiry, delivery: 'download', accessId: 'f'.repeat(32), signature: 's'.repeat(43) });

  it('takes the expiry only as it is signed: digits without leading zeros (security review I1)', () => {
    expect(linkOf(query('1900000000')).params.expiry).toBe(1_900_000_000);
    expect(linkOf(query('0')).params.expiry).toBe(0);
    for (const expiry of ['01900000000', '00', '1e9', ' 1900000000', '1900000000.0', '-1', '1234567890123']) {
      expect(() => linkOf(query(expiry))).toThrow(expect.objectContaining({ code: 'LINK_INVALID' }));
    }
  });
});
