import { outputFormat, planConversions, smartImagingSpec } from '../src/domain/conversion-spec';
import { outputSize } from '../src/domain/output-size';

describe('planConversions', () => {
  const custom = {
    thumb: { width: 200, height: 200, fit: 'cover', format: 'webp', quality: 80 },
    wide: { width: 1280, format: 'jpeg' },
    broken: { width: 0, height: 10 },
    nobox: { format: 'png' },
  };

  it('turns profile keys with a custom definition into specs, in profile order, with defaults filled', () => {
    const plan = planConversions({ conversions: { custom, profile: { image: ['wide', 'thumb'] } } });
    expect(plan.specs).toEqual([
      { key: 'wide', width: 1280, height: null, fit: 'cover', format: 'jpeg', quality: 80 },
      { key: 'thumb', width: 200, height: 200, fit: 'cover', format: 'webp', quality: 80 },
    ]);
    expect(plan.errors).toEqual({});
    expect(plan.skipped).toEqual([]);
  });

  it('plans the deepzoom pyramid apart and reports undefined or invalid keys as errors', () => {
    const plan = planConversions({
      conversions: { custom, profile: { image: ['deepzoom', 'thumb', 'missing', 'broken', 'nobox', 'thumb'] } },
    });
    expect(plan.specs.map((s) => s.key)).toEqual(['thumb']);
    expect(plan.deepzoom).toBe(true);
    expect(plan.skipped).toEqual([]);
    expect(Object.keys(plan.errors).sort()).toEqual(['broken', 'missing', 'nobox']);
    expect(plan.errors.missing).toMatch(/not defined/);
    expect(plan.errors.nobox).toMatch(/width or height/);
  });

  it('does not take inherited object properties for custom conversions', () => {
    const plan = planConversions({ conversions: { custom: {}, profile: { image: ['toString', 'constructor'] } } });
    expect(plan.specs).toEqual([]);
    expect(Object.keys(plan.errors)).toEqual(['toString', 'constructor']);
  });

  it('gives an empty plan for missing or malformed settings', () => {
    expect(planConversions({})).toEqual({ specs: [], errors: {}, skipped: [] });
    expect(planConversions({ conversions: { profile: { image: 'thumb' } } })).toEqual({ specs: [], errors: {}, skipped: [] });
  });
});

describe('outputFormat', () => {
  it.each([
    ['webp', 'webp', 'image/webp'],
    ['jpeg', 'jpg', 'image/jpeg'],
    ['png', 'png', 'image/png'],
    ['avif', 'avif', 'image/avif'],
  ] as const)('%s → .%s %s', (format, ext, contentType) => {
    expect(outputFormat(format)).toEqual({ ext, contentType });
  });
});

describe('smart_imaging', () => {
  it('fits ordinary images inside 1920 px without enlarging, and crops extreme ones to 3:1 by attention', () => {
    expect(smartImagingSpec({ width: 4000, height: 3000 })).toMatchObject({
      width: 1920,
      height: 1920,
      fit: 'inside',
      format: 'webp',
      withoutEnlargement: true,
    });
    expect(outputSize({ width: 4000, height: 3000 }, smartImagingSpec({ width: 4000, height: 3000 }))).toEqual({ width: 1920, height: 1440 });
    expect(outputSize({ width: 640, height: 480 }, smartImagingSpec({ width: 640, height: 480 }))).toEqual({ width: 640, height: 480 });
    expect(smartImagingSpec({ width: 1000, height: 300 })).toMatchObject({ width: 900, height: 300, fit: 'cover', position: 'attention' });
    expect(smartImagingSpec({ width: 6000, height: 1000 })).toMatchObject({ width: 1920, height: 640, fit: 'cover' });
    expect(smartImagingSpec({ width: 500, height: 4000 })).toMatchObject({ width: 500, height: 1500, fit: 'cover' });
  });

  it('is planned as a built-in, resolved once the size is known', () => {
    const plan = planConversions({ conversions: { profile: { image: ['smart_imaging', 'deepzoom'] } } });
    expect(plan.specs).toEqual([expect.objectContaining({ key: 'smart_imaging', smart: true })]);
    expect(plan.deepzoom).toBe(true);
  });
});
