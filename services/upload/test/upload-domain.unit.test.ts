import { newAssetId } from '../src/domain/asset-id';
import { imageMetadata, sniffContentType } from '@dam/storage';
import { makePng } from '@dam/testing';

describe('newAssetId', () => {
  it('gives 32 alphanumeric characters, different each time', () => {
    const ids = new Set(Array.from({ length: 1000 }, () => newAssetId()));
    expect(ids.size).toBe(1000);
    for (const id of ids) expect(id).toMatch(/^[A-Za-z0-9]{32}$/);
  });
});

describe('sniffContentType', () => {
  it('reads magic bytes', async () => {
    expect(await sniffContentType(makePng(2, 2), false)).toBe('image/png');
    expect(await sniffContentType(Buffer.from('%PDF-1.7\n%âãÏÓ\n1 0 obj\n'), false)).toBe('application/pdf');
  });

  it('falls back to text/plain for UTF-8 text and octet-stream otherwise', async () => {
    expect(await sniffContentType(Buffer.from('héllo wörld\n'), false)).toBe('text/plain');
    expect(await sniffContentType(Buffer.from([0x00, 0x01, 0x02, 0x9f, 0x00]), false)).toBe('application/octet-stream');
    expect(await sniffContentType(Buffer.alloc(0), false)).toBe('application/octet-stream');
  });

  it('does not call text binary because the head cut a multi-byte character', async () => {
    const head = Buffer.concat([Buffer.from('a'.repeat(100)), Buffer.from('é').subarray(0, 1)]);
    expect(await sniffContentType(head, true)).toBe('text/plain');
    expect(await sniffContentType(head, false)).toBe('application/octet-stream');
  });
});

describe('imageMetadata', () => {
  it('reads width and height of images only', async () => {
    expect(await imageMetadata(makePng(9, 4), 'image/png')).toEqual({ width: 9, height: 4 });
    expect(await imageMetadata(makePng(9, 4), 'text/plain')).toEqual({});
    expect(await imageMetadata(Buffer.from('nope'), 'image/png')).toEqual({});
  });
});
