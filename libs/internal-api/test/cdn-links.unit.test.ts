import { parseCdnEntry } from '../src';

const id = 'a'.repeat(32);

describe('parseCdnEntry', () => {
  it('reads an asset id, a link, and a link to one file of a folder key', () => {
    expect(parseCdnEntry(id)).toEqual({ id });
    expect(parseCdnEntry(`https://cdn.example/api/v1/files/content/${id}?key=thumb&expiry=1&signature=x`)).toEqual({ id, key: 'thumb' });
    expect(parseCdnEntry(`http://127.0.0.1:8082/api/v1/files/content/${id}/720p/index.m3u8?key=hls-video`)).toEqual({
      id,
      key: 'hls-video',
      file: '720p/index.m3u8',
    });
    expect(parseCdnEntry(`http://127.0.0.1:8082/api/v1/files/content/${id}`)).toEqual({ id, key: 'original' });
  });

  it('refuses anything else', () => {
    for (const bad of [
      'a'.repeat(31),
      'not a url',
      `ftp://cdn.example/api/v1/files/content/${id}`,
      `https://cdn.example/api/v1/other/${id}`,
      `https://cdn.example/api/v1/files/content/${id}/a//b`,
      `https://cdn.example/api/v1/files/content/${id}/%E0%A4%A`,
    ]) {
      expect([bad, parseCdnEntry(bad)]).toEqual([bad, undefined]);
    }
  });
});
