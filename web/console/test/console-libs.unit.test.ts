import { conversionKind, previewKey, processKeys, thumbnailKey } from '../src/lib/conversions';
import { formatBytes } from '../src/lib/format';
import { readSearchState, searchBody, writeSearchState } from '../src/lib/search';
import { customMetadataFor } from '../src/picker/custom-metadata';

describe('conversions', () => {
  const image = {
    thumb: { width: 200, height: 200, size: 9000 },
    smart_imaging: { width: 1920, height: 1280, size: 300_000 },
    tiny: { width: 64, height: 64, size: 1000 },
    deepzoom: { width: 4000, height: 3000, size: 2_000_000 },
    background_removal: { width: 4000, height: 3000, size: 800_000 },
  };

  it('picks the smallest image conversion for a thumbnail, never a multi-file or video one', () => {
    expect(thumbnailKey(image, 'image/jpeg')).toBe('tiny');
    expect(thumbnailKey({ deepzoom: { width: 10, height: 10, size: 1 } }, 'image/png')).toBeUndefined();
    expect(thumbnailKey({ '360p-video': { width: 640, height: 360, size: 1 }, storyboard: { width: 100, height: 100, size: 1 } }, 'video/mp4')).toBeUndefined();
    expect(thumbnailKey({ odd: { width: null, height: null, size: 5 } }, 'image/png')).toBeUndefined();
    expect(thumbnailKey(undefined, 'image/png')).toBeUndefined();
  });

  it('shows smart_imaging large, else a small web original, else the largest picture', () => {
    expect(previewKey(image, 'image/jpeg', 100)).toBe('smart_imaging');
    expect(previewKey({ thumb: image.thumb, tiny: image.tiny }, 'image/jpeg', 100_000)).toBe('original');
    expect(previewKey({ thumb: image.thumb, tiny: image.tiny }, 'image/jpeg', 50 * 1024 * 1024)).toBe('thumb');
    expect(previewKey({ thumb: image.thumb, tiny: image.tiny }, 'image/tiff', 100)).toBe('thumb');
    expect(previewKey({}, 'application/pdf', 100)).toBeUndefined();
  });

  it('classifies keys for their viewer', () => {
    expect(conversionKind('hls-video', 'video/mp4')).toBe('hls');
    expect(conversionKind('deepzoom', 'image/png')).toBe('deepzoom');
    expect(conversionKind('720p-wm-video', 'video/mp4')).toBe('video');
    expect(conversionKind('clip_preview', 'video/mp4')).toBe('video');
    expect(conversionKind('thumb', 'image/png')).toBe('image');
    expect(conversionKind('whatever', 'application/pdf')).toBe('other');
  });

  it('offers the process keys of the file type', () => {
    expect(processKeys('image/png', ['banner'])).toEqual(['smart_imaging', 'deepzoom', 'banner']);
    expect(processKeys('video/mp4', [])).toContain('hls-video');
    expect(processKeys('application/pdf', ['banner'])).toEqual([]);
  });
});

describe('search state', () => {
  it('round-trips through the URL and defaults what is missing or wrong', () => {
    const s = { q: 'beach', types: ['image/*', 'video/*'], statuses: ['OK'], creator: 7, sort: 'name:asc', page: 3 };
    expect(readSearchState(new URLSearchParams(writeSearchState(s)))).toEqual(s);
    expect(readSearchState(new URLSearchParams('sort=evil&page=-2&creator=x'))).toEqual({
      q: '',
      types: [],
      statuses: [],
      creator: undefined,
      sort: 'upload_time:desc',
      page: 1,
    });
    expect(writeSearchState(readSearchState(new URLSearchParams('')))).toBe('');
  });

  it('makes the Search body: filters, sort, facets, extended results', () => {
    const body = searchBody({ q: ' sun ', types: ['image/*'], statuses: ['NOT_READY', 'BOGUS'], creator: 2, sort: 'size:asc', page: 2 });
    expect(body).toEqual({
      query: 'sun',
      filters: { content_type: ['image/*'], status: ['NOT_READY'], creator_id: 2 },
      sort: [{ field: 'size', order: 'asc' }],
      page_size: 24,
      extended: true,
      facets: ['content_type', 'status', 'tags', 'creator_id'],
      trashed: false,
    });
    expect(searchBody(readSearchState(new URLSearchParams()))).toMatchObject({ filters: {}, trashed: false });
    expect(searchBody(readSearchState(new URLSearchParams()), { trashed: true })).toMatchObject({ trashed: true });
  });
});

describe('custom metadata of an upload', () => {
  it('merges the typed title, description and JSON over the common data', () => {
    const r = customMetadataFor({ title: ' Sea ', description: '', data: '{"rating": 4, "camera": "X100"}' }, { project: 'p1', rating: 1 });
    expect(r.ok && JSON.parse(r.value as string)).toEqual({ data: { project: 'p1', rating: 4, camera: 'X100', title: 'Sea' }, mode: 'APPEND' });
  });

  it('sends nothing when there is nothing to send, and names the schema when given', () => {
    expect(customMetadataFor({})).toEqual({ ok: true, value: undefined });
    const r = customMetadataFor({}, {}, 3);
    expect(r.ok && JSON.parse(r.value as string)).toEqual({ data: {}, mode: 'APPEND', data_schema_id: 3 });
  });

  it('refuses JSON that is not an object', () => {
    expect(customMetadataFor({ data: '{nope' })).toEqual({ ok: false, error: 'More data is not valid JSON' });
    expect(customMetadataFor({ data: '[1]' })).toMatchObject({ ok: false });
  });
});

it('formats sizes', () => {
  expect(formatBytes(0)).toBe('0 B');
  expect(formatBytes(1536)).toBe('1.5 KB');
  expect(formatBytes(20 * 1024 * 1024)).toBe('20 MB');
  expect(formatBytes(-1)).toBe('—');
});
