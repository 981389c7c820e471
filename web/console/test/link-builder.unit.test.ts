import { hasTransform, initialLinkForm, isImageKey, linkErrors, linkQuery, transformsApply, type LinkForm } from '../src/lib/link-builder';

const image = {
  content_type: 'image/png',
  conversions: { thumbnail: { width: 200, height: 150, size: 900 }, deepzoom: { width: 1600, height: 1200, size: 9 } },
};
const video = {
  content_type: 'video/mp4',
  conversions: { '360p-video': { width: 640, height: 360, size: 9 }, storyboard: { width: 100, height: 100, size: 9 } },
};
const form = (over: Partial<LinkForm> = {}): LinkForm => ({ ...initialLinkForm(), ...over });

describe('the link builder (CONTRACT §15)', () => {
  it('knows the image keys: an image original and its picture conversions, never deepzoom, a video or an unknown key', () => {
    expect(isImageKey('original', image)).toBe(true);
    expect(isImageKey('thumbnail', image)).toBe(true);
    expect(isImageKey('deepzoom', image)).toBe(false);
    expect(isImageKey('nope', image)).toBe(false);
    expect(isImageKey('original', video)).toBe(false);
    expect(isImageKey('360p-video', video)).toBe(false);
    expect(isImageKey('original', { content_type: 'application/pdf' })).toBe(false);
  });

  it('applies transforms to cdn links of images only', () => {
    expect(transformsApply(form(), true)).toBe(true);
    expect(transformsApply(form({ link_type: 'object_storage' }), true)).toBe(false);
    expect(transformsApply(form(), false)).toBe(false);
  });

  it('sends the given transform fields in the URL order, trimmed, and leaves out the empty ones', () => {
    const q = linkQuery(form({ q: ' 80 ', format: 'webp', w: '100', expiry: 'MAX' }), true);
    expect(q).toEqual({ key: 'original', link_type: 'cdn', delivery: 'display', expiry: 'MAX', w: '100', format: 'webp', q: '80' });
    expect(Object.keys(q)).toEqual(['key', 'link_type', 'delivery', 'expiry', 'w', 'format', 'q']);
    expect(linkQuery(form({ w: '', h: '  ' }), true)).toEqual({ key: 'original', link_type: 'cdn', delivery: 'display', expiry: '3600' });
  });

  it('sends no transform where the API would refuse it (object_storage, a key that is not an image)', () => {
    const typed = { w: '100', h: '50', fit: 'cover', format: 'avif', q: '70' } as const;
    expect(linkQuery(form({ ...typed, link_type: 'object_storage' }), true)).toEqual({
      key: 'original',
      link_type: 'object_storage',
      delivery: 'display',
      expiry: '3600',
    });
    expect(linkQuery(form({ ...typed, key: 'deepzoom' }), false)).toEqual({ key: 'deepzoom', link_type: 'cdn', delivery: 'display', expiry: '3600' });
    expect(hasTransform(form(typed))).toBe(true);
    expect(hasTransform(form())).toBe(false);
  });

  it("puts each of the API's 400 details next to its field (query.q, expiry), whatever the prefix", () => {
    const body = {
      error: {
        code: 'VALIDATION_FAILED',
        message: 'The request is not valid',
        details: [
          { path: 'query.q', message: 'Too big: expected number to be <=100' },
          { path: 'expiry', message: 'Over the maximum' },
          { path: 'query.q', message: 'Expected an integer' },
        ],
      },
    };
    expect(linkErrors(body)).toEqual({ fields: { q: 'Too big: expected number to be <=100; Expected an integer', expiry: 'Over the maximum' } });
  });

  it('keeps what belongs to no field as a general message with the code', () => {
    expect(linkErrors({ error: { code: 'TRANSFORM_NOT_APPLICABLE', message: '"video" is not an image' } })).toEqual({
      fields: {},
      general: '"video" is not an image (TRANSFORM_NOT_APPLICABLE)',
    });
    expect(
      linkErrors({
        error: {
          code: 'VALIDATION_FAILED',
          message: 'Bad',
          details: [
            { path: 'query.w', message: 'Too small' },
            { path: 'query.zoom', message: 'Unknown' },
          ],
        },
      }),
    ).toEqual({
      fields: { w: 'Too small' },
      general: 'Bad (VALIDATION_FAILED): query.zoom: Unknown',
    });
    expect(linkErrors(new Error('offline'))).toEqual({ fields: {}, general: 'offline' });
    expect(linkErrors(undefined)).toEqual({ fields: {}, general: 'The request failed' });
  });
});
