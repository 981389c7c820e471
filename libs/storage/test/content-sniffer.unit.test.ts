import { makePng, retainedBytesPerCall } from '@dam/testing';
import { contentTypeOfFile, imageMetadata, sniffContentType, textType } from '../src';

describe('sniffContentType', () => {
  it('names SVG, HTML and XML by their first markup, whatever comes before it', async () => {
    const svg = '<?xml version="1.0"?>\n<!-- made by hand -->\n<!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" "x">\n<svg xmlns="http://www.w3.org/2000/svg"/>';
    expect(await sniffContentType(Buffer.from(svg), false)).toBe('image/svg+xml');
    expect(await sniffContentType(Buffer.from('\uFEFF<svg width="1" height="1"></svg>'), false)).toBe('image/svg+xml');
    expect(await sniffContentType(Buffer.from('<!doctype html><title>x</title>'), false)).toBe('text/html');
    expect(await sniffContentType(Buffer.from('<html><body>x</body></html>'), false)).toBe('text/html');
    expect(await sniffContentType(Buffer.from('<?xml version="1.0"?><feed/>'), false)).toBe('application/xml');
  });

  it('keeps plain text plain, binary binary, and magic bytes first', async () => {
    expect(textType(Buffer.from('a note that mentions <svg> later'))).toBe('text/plain');
    expect(await sniffContentType(Buffer.from('{"a": 1}'), false)).toBe('text/plain');
    expect(await sniffContentType(Buffer.from([0, 1, 2, 3, 255]), false)).toBe('application/octet-stream');
    expect(await sniffContentType(Buffer.from('%PDF-1.4\n<svg>'), false)).toBe('application/pdf');
  });
});

describe('contentTypeOfFile', () => {
  it('types the files of multi-file conversions by name', () => {
    expect(contentTypeOfFile('image.dzi')).toBe('application/xml');
    expect(contentTypeOfFile('image_files/0/0_0.jpeg')).toBe('image/jpeg');
    expect(contentTypeOfFile('720p/index.m3u8')).toBe('application/vnd.apple.mpegurl');
    expect(contentTypeOfFile('720p/seg_001.ts')).toBe('video/mp2t');
    expect(contentTypeOfFile('storyboard.vtt')).toBe('text/vtt');
    expect(contentTypeOfFile('x.bin')).toBe('application/octet-stream');
  });
});

describe('imageMetadata', () => {
  it('keeps nothing per image it reads (exifr keeps every options object it is given)', async () => {
    const png = makePng(9, 4);
    expect(await imageMetadata(png, 'image/png')).toEqual({ width: 9, height: 4 });
    // With an options literal per call each read kept some 7 KB; the bound leaves room for the heap's noise.
    expect(await retainedBytesPerCall(() => imageMetadata(png, 'image/png'), 3000)).toBeLessThan(500);
  });
});
