/**
 * Issue 33: the cache tier (deploy/cache: Debian's nginx with its template and purge.js) and a `format=auto` link,
 * whose answer follows Accept (`Vary: Accept`). Followed as nginx follows Vary, each Accept string got a cache file of
 * its own named by md5(md5(key) bytes, "accept:", the Accept value, CRLF), and the first variant lived under the key's
 * own file: a purge of the key deleted that one, and the others were served again until their max-age. The key now
 * ends with the Accept class (avif, webp, other), every variant has a key the edge is told (X-Cache-Key), and a purge
 * of those keys leaves nothing. A stand-in edge here: it remembers the keys it is told and answers by Accept.
 */
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { startCdnCache, type RunningCdnCache } from '../cache/nginx-cdn';

const free = (): Promise<number> =>
  new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => resolve(port));
    });
  });

let dir: string;
let edge: Server;
let tier: RunningCdnCache;
/** The edge's version of the object: a replaced original. */
let version = 1;
const told: string[] = [];

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'cdn-cache-vary-'));
  edge = createServer((req, res) => {
    told.push(String(req.headers['x-cache-key']));
    const accept = req.headers.accept ?? '';
    const format = /image\/avif(?!;q=0)/.test(accept) ? 'avif' : /image\/webp(?!;q=0)/.test(accept) ? 'webp' : 'png';
    const body = `v${version} ${format}`;
    res.writeHead(200, {
      'content-type': `image/${format}`,
      'content-length': body.length,
      'cache-control': 'public, max-age=300',
      etag: `"v${version}-${format}"`,
      vary: 'Accept',
      // What the edge says of an answer under a key whose Accept class is not the one it answered for.
      ...(req.url?.includes('&keep=no') ? { 'x-accel-expires': '0' } : {}),
    });
    res.end(body);
  });
  await new Promise<void>((resolve) => edge.listen(0, '127.0.0.1', resolve));
  const [port, purgePort] = [await free(), await free()];
  tier = await startCdnCache({ upstream: `127.0.0.1:${(edge.address() as AddressInfo).port}`, port, purgePort, dir });
});

afterAll(async () => {
  await tier?.stop();
  await new Promise((resolve) => edge?.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

const files = (): string[] => {
  const out: string[] = [];
  const walk = (d: string) => readdirSync(d).forEach((f) => (statSync(path.join(d, f)).isDirectory() ? walk(path.join(d, f)) : out.push(f)));
  walk(path.join(dir, 'cache'));
  return out;
};

const LINK = '/api/v1/files/content/abc?key=original&expiry=2000000000&delivery=display&accessId=x&w=48&format=auto&signature=s';
const get = async (accept: string | undefined, link = LINK) => {
  const res = await fetch(`${tier.url}${link}`, { headers: accept === undefined ? {} : { accept } });
  return [res.headers.get('x-cache-status'), await res.text(), res.headers.get('vary')];
};

describe('the cache tier and format=auto', () => {
  const browsers = ['image/avif,image/webp,image/apng,*/*;q=0.8', 'image/webp,*/*', 'text/html,*/*'];

  it('keys a format=auto link on the Accept class, tells the edge each key, keeps Vary for downstream, and a purge of those keys leaves none', async () => {
    for (const a of browsers)
      expect(await get(a)).toEqual(['MISS', `v1 ${a.startsWith('image/avif') ? 'avif' : a.startsWith('image/webp') ? 'webp' : 'png'}`, 'Accept']);
    for (const a of browsers) expect((await get(a))[0]).toBe('HIT');
    const keys = [...new Set(told)];
    const before = files();

    version = 2; // the original is replaced; the edge purges every key it was told
    const purge = await fetch(tier.purgeUrl, { method: 'POST', body: keys.join('\n') });
    expect(purge.status).toBe(200);
    const left = files();
    // Before: the first variant (under the key's own file) was a miss, the others still hits with v1.
    for (const a of browsers) expect([a, ...(await get(a)).slice(0, 2)]).toEqual([a, 'MISS', expect.stringMatching(/^v2 /)]);
    expect(left).toEqual([]);
    expect([before.length, keys.map((k) => k.slice(LINK.length))]).toEqual([
      3,
      ['bytes=0-1048575 accept=avif', 'bytes=0-1048575 accept=webp', 'bytes=0-1048575 accept=other'],
    ]);
  });

  it('keeps no answer the edge marks X-Accel-Expires: 0, and does not pass that header on', async () => {
    for (let i = 0; i < 2; i++) {
      const res = await fetch(`${tier.url}${LINK}&keep=no`, { headers: { accept: 'image/webp' } });
      await res.text();
      expect([res.headers.get('x-cache-status'), res.headers.get('x-accel-expires'), res.headers.get('cache-control')]).toEqual([
        'MISS',
        null,
        'public, max-age=300',
      ]);
    }
  });

  it('puts every Accept in the class the edge answers for (an accepted type named with a q-value above 0)', async () => {
    const classOf = async (accept: string | undefined, n: number) => {
      told.length = 0;
      await get(accept, `${LINK}&n=${n}`);
      return told[0]?.replace(/^.* accept=/, '');
    };
    const cases: Array<[string | undefined, string]> = [
      [undefined, 'other'],
      ['*/*', 'other'],
      ['image/*', 'other'],
      ['IMAGE/AVIF', 'avif'],
      ['image/avif;q=0.5, image/webp', 'avif'],
      ['image/avif;q=0, image/webp', 'webp'],
      ['image/avif ; q=0.0,image/webp;q=0,*/*', 'other'],
      ['image/webp', 'webp'],
      ['image/avifx,image/webpx', 'other'],
    ];
    for (const [i, [accept, cls]] of cases.entries()) expect([accept, await classOf(accept, i)]).toEqual([accept, cls]);
    // Not format=auto: the key is the URL and the slice alone, whatever the Accept.
    told.length = 0;
    await get('image/avif', LINK.replace('format=auto', 'format=webp'));
    expect(told).toEqual([`${LINK.replace('format=auto', 'format=webp')}bytes=0-1048575`]);
  });
});
