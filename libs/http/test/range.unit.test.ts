import { parseRange, rangeUnlessChanged } from '../src/range';

describe('parseRange', () => {
  const size = 1000;
  it.each([
    [undefined, { kind: 'full' }],
    ['', { kind: 'full' }],
    ['items=0-5', { kind: 'full' }],
    ['bytes=0-99', { kind: 'partial', range: { start: 0, end: 99 } }],
    ['bytes=900-', { kind: 'partial', range: { start: 900, end: 999 } }],
    ['bytes=-100', { kind: 'partial', range: { start: 900, end: 999 } }],
    ['bytes=-5000', { kind: 'partial', range: { start: 0, end: 999 } }],
    ['bytes=990-5000', { kind: 'partial', range: { start: 990, end: 999 } }],
    ['bytes=0-0', { kind: 'partial', range: { start: 0, end: 0 } }],
    ['bytes=0-1,5-6', { kind: 'full' }],
    ['bytes=1000-', { kind: 'unsatisfiable' }],
    ['bytes=1000-1001', { kind: 'unsatisfiable' }],
    ['bytes=-0', { kind: 'unsatisfiable' }],
    // Syntactically invalid: ignored, the full body (RFC 9110 §14.2), never 416.
    ['bytes=5-2', { kind: 'full' }],
    ['bytes=-', { kind: 'full' }],
    ['bytes=abc', { kind: 'full' }],
    ['bytes=', { kind: 'full' }],
    ['bytes 0-5', { kind: 'full' }],
    ['bytes=1-x', { kind: 'full' }],
  ])('%s', (header, expected) => {
    expect(parseRange(header, size)).toEqual(expected);
  });

  it('refuses any range of an empty representation', () => {
    expect(parseRange('bytes=0-', 0)).toEqual({ kind: 'unsatisfiable' });
    expect(parseRange('bytes=-1', 0)).toEqual({ kind: 'unsatisfiable' });
  });

  it('applies If-Range only while the strong entity tag still matches', () => {
    expect(rangeUnlessChanged('bytes=0-1', undefined, '"e1"')).toBe('bytes=0-1');
    expect(rangeUnlessChanged('bytes=0-1', '"e1"', '"e1"')).toBe('bytes=0-1');
    expect(rangeUnlessChanged('bytes=0-1', '"e0"', '"e1"')).toBeUndefined();
    expect(rangeUnlessChanged('bytes=0-1', 'W/"e1"', '"e1"')).toBeUndefined();
    expect(rangeUnlessChanged('bytes=0-1', 'Sat, 01 Jan 2000 00:00:00 GMT', '"e1"')).toBeUndefined();
    expect(rangeUnlessChanged(undefined, '"e1"', '"e1"')).toBeUndefined();
  });
});
