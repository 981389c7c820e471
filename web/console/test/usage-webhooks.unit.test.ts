import { clip, faceBoxes, faceImageKey, scaleBox } from '../src/lib/face-boxes';
import { bucketOrigin, bucketStarts, fillSeries, formatMetric, periodFor, periodsFor, totalOf } from '../src/lib/usage';
import { lastAnswer, reissueRange } from '../src/lib/webhooks';
import { clock, parseStoryboardVtt, spriteSize, vttTime } from '../src/lib/storyboard';
import { mayUse, navFor } from '../src/lib/nav';
import { PERMISSIONS } from '../../../libs/auth-tokens/src';

const at = (iso: string) => Date.parse(iso);

describe('usage buckets (CONTRACT §9: from truncated to the hour for 1h, to the day for 24h and 7d)', () => {
  it('starts buckets where the API does and covers up to `to`', () => {
    expect(new Date(bucketOrigin(at('2026-04-02T06:40:00Z'), '1h')).toISOString()).toBe('2026-04-02T06:00:00.000Z');
    expect(new Date(bucketOrigin(at('2026-04-02T06:40:00Z'), '7d')).toISOString()).toBe('2026-04-02T00:00:00.000Z');
    const hours = bucketStarts(at('2026-04-02T06:40:00Z'), at('2026-04-02T09:00:00Z'), '1h').map((t) => new Date(t).toISOString());
    expect(hours).toEqual(['2026-04-02T06:00:00.000Z', '2026-04-02T07:00:00.000Z', '2026-04-02T08:00:00.000Z', '2026-04-02T09:00:00.000Z']);
    expect(bucketStarts(at('2026-01-01T00:00:00Z'), at('2026-01-29T12:00:00Z'), '7d')).toHaveLength(5);
  });

  it('fills the buckets the series leaves out with 0, keeping the ones it answers', () => {
    const filled = fillSeries(
      [
        { start: '2026-04-02T07:00:00.000Z', value: 342 },
        { start: '2026-04-02T06:00:00.000Z', value: 120 },
      ],
      at('2026-04-02T06:10:00Z'),
      at('2026-04-02T08:30:00Z'),
      '1h',
    );
    expect(filled.map((p) => p.value)).toEqual([120, 342, 0]);
  });

  it('offers only bucket sizes that give a readable chart, and falls back to the smallest of them', () => {
    const now = at('2026-11-27T23:00:00Z');
    expect(periodsFor(now - 86_400_000, now)).toEqual(['1h', '24h', '7d']);
    expect(periodsFor(now - 364 * 86_400_000, now)).toEqual(['24h', '7d']);
    expect(periodFor(now - 364 * 86_400_000, now, '1h')).toBe('24h');
    expect(periodFor(now - 7 * 86_400_000, now, '24h')).toBe('24h');
  });

  it('totals a counter by adding its buckets and a gauge by its latest value', () => {
    const s = [{ value: 120 }, { value: 342 }, { value: 95 }];
    expect(totalOf(s, 'counter')).toBe(557);
    expect(totalOf(s, 'gauge')).toBe(95);
    expect(totalOf([], 'gauge')).toBe(0);
  });

  it('writes each metric in its unit', () => {
    expect(formatMetric(1536, 'bytes')).toBe('1.5 KB');
    expect(formatMetric(5 * 1024 ** 3, 'bytes')).toBe('5.0 GB');
    expect(formatMetric(5400, 'seconds')).toBe('1.5 h');
    expect(formatMetric(42, 'seconds')).toBe('42 s');
    expect(formatMetric(12345, 'count')).toBe('12,345');
  });
});

describe('face boxes on the displayed picture', () => {
  it('scales boxes from the original pixels to per cent, whatever size the picture is shown at', () => {
    const boxes = faceBoxes({ faces: [{ box: { x: 100, y: 50, width: 200, height: 100 }, confidence: 0.97, person_id: 3 }] }, { width: 400, height: 200 });
    expect(boxes).toEqual([{ x: 25, y: 25, width: 50, height: 50, label: 'Person 3 (97 %)' }]);
    expect(scaleBox({ x: 100, y: 50, width: 200, height: 100 }, { width: 400, height: 200 }, { width: 200, height: 100 })).toEqual({
      x: 50,
      y: 25,
      width: 100,
      height: 50,
    });
  });

  it('clips boxes to the picture and leaves out those off it or malformed', () => {
    const boxes = faceBoxes(
      {
        faces: [
          { box: { x: -50, y: 150, width: 100, height: 100 } },
          { box: { x: 500, y: 0, width: 10, height: 10 } },
          { box: { x: 1, y: 1, width: 0, height: 5 } },
          { box: 'nope' },
        ],
      },
      { width: 400, height: 200 },
    );
    expect(boxes).toEqual([{ x: 0, y: 75, width: 12.5, height: 25, label: 'Face 1' }]);
    expect(clip({ x: 90, y: 90, width: 20, height: 20 }, 100, 100)).toEqual({ x: 90, y: 90, width: 10, height: 10 });
    expect(faceBoxes({ faces: [] }, { width: 0, height: 0 })).toEqual([]);
  });
});

describe('webhooks', () => {
  it("says a delivery's last answer", () => {
    expect(lastAnswer({ attempt_count: 2, response_code: 200, error: null })).toBe('HTTP 200');
    expect(lastAnswer({ attempt_count: 8, response_code: null, error: 'timeout after 15 s' })).toBe('timeout after 15 s');
    expect(lastAnswer({ attempt_count: 0, response_code: null, error: null })).toBe('Not tried yet');
  });

  it('checks the reissue range as the API does: end after start, at most 7 days', () => {
    expect(reissueRange('2026-04-01T00:00', '2026-04-08T00:00')).toEqual({
      start_date: new Date('2026-04-01T00:00').toISOString(),
      end_date: new Date('2026-04-08T00:00').toISOString(),
    });
    expect(reissueRange('2026-04-01T00:00', '2026-04-08T00:01')).toEqual({ errors: { start_date: undefined, end_date: 'The range may be at most 7 days.' } });
    expect(reissueRange('2026-04-02T00:00', '2026-04-01T00:00')).toEqual({ errors: { start_date: undefined, end_date: 'The end must be after the start.' } });
    expect(reissueRange('', '2026-04-01T00:00')).toEqual({ errors: { start_date: 'Give the start of the range.', end_date: undefined } });
  });
});

describe('the picture the face boxes are drawn on', () => {
  const natural = { width: 4000, height: 3000 };
  it('is the original when the browser shows it, else the largest conversion of the same proportions (never a crop)', () => {
    expect(faceImageKey({}, 'image/jpeg', 1000, natural)).toBe('original');
    expect(
      faceImageKey(
        {
          smart_imaging: { width: 1200, height: 900 },
          thumb: { width: 200, height: 200 },
          large: { width: 1600, height: 1200 },
          small: { width: 400, height: 300 },
        },
        'image/tiff',
        1000,
        natural,
      ),
    ).toBe('large');
    expect(faceImageKey({ thumb: { width: 200, height: 200 } }, 'image/tiff', 1000, natural)).toBeUndefined();
  });
});

describe('who is offered Usage and Webhooks (CONTRACT §2: VIEW_USAGE; the delivery log is MANAGE_SETTINGS)', () => {
  const ours = (role: keyof typeof PERMISSIONS) =>
    navFor(PERMISSIONS[role])
      .map((p) => p.label)
      .filter((l) => l === 'Usage' || l === 'Webhooks');
  it('offers Usage to ADMIN and MANAGER, Webhooks to ADMIN only, neither to USER or CREATOR', () => {
    expect(ours('ADMIN')).toEqual(['Usage', 'Webhooks']);
    expect(ours('MANAGER')).toEqual(['Usage']);
    expect(ours('USER')).toEqual([]);
    expect(ours('CREATOR')).toEqual([]);
    expect(mayUse('webhooks', PERMISSIONS.MANAGER)).toBe(false);
    expect(mayUse('usage', PERMISSIONS.USER)).toBe(false);
  });
});

describe("the storyboard's cues", () => {
  it('reads each cue as a time range and a region of the sprite, skipping what is not one', () => {
    const vtt =
      'WEBVTT\n\n00:00:00.000 --> 00:00:02.000\nsprite.jpg#xywh=0,0,160,90\n\n00:02.000 --> 00:04.500\r\nsprite.jpg#xywh=160,0,160,90\r\n\n00:00:04.500 --> 00:00:06.000\nnot a region\n';
    const frames = parseStoryboardVtt(vtt);
    expect(frames).toEqual([
      { start: 0, end: 2, x: 0, y: 0, w: 160, h: 90 },
      { start: 2, end: 4.5, x: 160, y: 0, w: 160, h: 90 },
    ]);
    expect(spriteSize(frames)).toEqual({ width: 320, height: 90 });
    expect(vttTime('01:02:03.5')).toBe(3723.5);
    expect(clock(75.5)).toBe('1:15');
    expect(clock(3723)).toBe('1:02:03');
  });
});
