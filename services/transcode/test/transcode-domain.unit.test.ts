import type { VideoInfo } from '@dam/media';
import { encodeArgs, encodeFilterGraph } from '../src/domain/ffmpeg-args';
import { avcCodecString, bandwidthOf, masterPlaylist, playlistSegments } from '../src/domain/hls';
import { gridFor, planStoryboard, storyboardVtt, vttTime } from '../src/domain/storyboard';
import { planClipPreview, planTranscodes, renditionOfKey, scaledTo } from '../src/domain/transcode-plan';
import { keysOf } from '../src/use-cases/transcode-asset.use-case';

const info = (over: Partial<VideoInfo> = {}): VideoInfo => ({
  duration: 60,
  width: 1920,
  height: 1080,
  video_codec: 'h264',
  audio_codec: 'aac',
  bitrate: 5_000_000,
  frame_rate: 30,
  hasAudio: true,
  rotation: 0,
  ...over,
});

describe('planTranscodes', () => {
  it('never upscales: taller renditions are skipped with the reason', () => {
    const plan = planTranscodes(['360p-video', '720p-video', '1080p-video'], info({ width: 1280, height: 720 }), { watermark: false });
    expect(plan.files.map((f) => f.key)).toEqual(['360p-video', '720p-video']);
    expect(plan.skipped).toEqual({ '1080p-video': 'the source is 1280x720: a 1080p rendition would upscale it' });
    expect(plan.encodes.map((e) => [e.id, e.width, e.height])).toEqual([
      ['360p', 640, 360],
      ['720p', 1280, 720],
    ]);
  });

  it('shares one encode between a rendition and the HLS variant of the same height', () => {
    const plan = planTranscodes(['720p-video', 'hls-video'], info(), { watermark: false });
    expect(plan.hls?.variants).toEqual(['360p', '480p', '720p', '1080p']);
    expect(plan.encodes.map((e) => e.id)).toEqual(['360p', '480p', '720p', '1080p']);
    expect(plan.files).toEqual([{ key: '720p-video', encode: '720p' }]);
  });

  it('a source under 360p gets one HLS variant of its own size', () => {
    const plan = planTranscodes(['hls-video'], info({ width: 321, height: 241 }), { watermark: false });
    expect(plan.encodes).toEqual([expect.objectContaining({ id: 'source', width: 322, height: 242 })]);
  });

  it('portrait sources scale their short side', () => {
    expect(scaledTo({ width: 1080, height: 1920 }, 720)).toEqual({ width: 720, height: 1280 });
    const plan = planTranscodes(['1080p-video'], info({ width: 1080, height: 1920 }), { watermark: false });
    expect(plan.encodes[0]).toMatchObject({ width: 1080, height: 1920 });
  });

  it('watermarked keys need a watermark; unknown keys are skipped', () => {
    const plan = planTranscodes(['480p-wm-video', 'thumb'], info(), { watermark: false });
    expect(plan.errors).toEqual({ '480p-wm-video': 'no watermark is set (conversions.watermark_asset_id)' });
    expect(plan.skipped.thumb).toMatch(/not something/);
    const marked = planTranscodes(['480p-wm-video', '480p-video'], info(), { watermark: true });
    expect(marked.encodes.map((e) => e.id)).toEqual(['480p', '480p-wm']);
  });

  it('the preview starts a tenth in for long videos, at once for short ones, and is at most 360p', () => {
    expect(planClipPreview(info())).toEqual({ start: 6, duration: 6, width: 640, height: 360 });
    expect(planClipPreview(info({ duration: 4, width: 320, height: 240 }))).toEqual({ start: 0, duration: 4, width: 320, height: 240 });
  });

  it('reads rendition keys', () => {
    expect(renditionOfKey('1080p-wm-video')).toEqual({ step: 1080, watermark: true });
    expect(renditionOfKey('240p-video')).toBeUndefined();
  });
});

describe('storyboard', () => {
  it('samples every second up to 100 thumbnails, then spaces them out', () => {
    expect(planStoryboard({ duration: 60, width: 1920, height: 1080 })).toEqual({ interval: 1, thumbWidth: 160, thumbHeight: 90 });
    expect(planStoryboard({ duration: 3600, width: 1080, height: 1920 })).toEqual({ interval: 36, thumbWidth: 90, thumbHeight: 160 });
    expect(gridFor(60)).toEqual({ columns: 10, rows: 6 });
    expect(gridFor(3)).toEqual({ columns: 3, rows: 1 });
  });

  it('cues run back to back from 0 to the end, each on its own sprite cell', () => {
    const vtt = storyboardVtt({ interval: 2, thumbWidth: 160, thumbHeight: 90 }, 12, 23.5);
    expect(vtt.startsWith('WEBVTT\n\n00:00:00.000 --> 00:00:02.000\nsprite.jpg#xywh=0,0,160,90\n')).toBe(true);
    expect(vtt).toContain('00:00:20.000 --> 00:00:22.000\nsprite.jpg#xywh=0,90,160,90');
    expect(vtt).toContain('00:00:22.000 --> 00:00:23.500\nsprite.jpg#xywh=160,90,160,90');
    expect(vttTime(3725.25)).toBe('01:02:05.250');
  });
});

describe('HLS', () => {
  it('codec strings from ffprobe profile and level', () => {
    expect(avcCodecString('High', 31)).toBe('avc1.64001f');
    expect(avcCodecString('Main', 30)).toBe('avc1.4d401e');
    expect(avcCodecString('Constrained Baseline', 21)).toBe('avc1.42e015');
  });

  it('bandwidth is the peak segment bit rate; the average is over all', () => {
    const segments = playlistSegments('#EXTM3U\n#EXTINF:4.000000,\nseg_00000.ts\n#EXTINF:4.0,\nseg_00001.ts\n#EXTINF:0.5,\nseg_00002.ts\n#EXT-X-ENDLIST\n');
    expect(segments.map((s) => s.uri)).toEqual(['seg_00000.ts', 'seg_00001.ts', 'seg_00002.ts']);
    const sized = segments.map((s, i) => ({ duration: s.duration, bytes: [100_000, 200_000, 10_000][i] as number }));
    expect(bandwidthOf(sized)).toEqual({ bandwidth: 400_000, averageBandwidth: Math.ceil((310_000 * 8) / 8.5) });
  });

  it('the master lists variants by bandwidth with resolution and codecs', () => {
    const text = masterPlaylist([
      { name: '720p', width: 1280, height: 720, bandwidth: 3_000_000, averageBandwidth: 2_000_000, codecs: 'avc1.64001f' },
      { name: '360p', width: 640, height: 360, bandwidth: 800_000, averageBandwidth: 600_000, codecs: 'avc1.64001e' },
    ]);
    expect(text).toBe(
      '#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-INDEPENDENT-SEGMENTS\n' +
        '#EXT-X-STREAM-INF:BANDWIDTH=800000,AVERAGE-BANDWIDTH=600000,RESOLUTION=640x360,CODECS="avc1.64001e"\n360p/index.m3u8\n' +
        '#EXT-X-STREAM-INF:BANDWIDTH=3000000,AVERAGE-BANDWIDTH=2000000,RESOLUTION=1280x720,CODECS="avc1.64001f"\n720p/index.m3u8\n',
    );
  });
});

describe('ffmpeg arguments', () => {
  const settings = { preset: 'veryfast', crf: 23, segmentSeconds: 4, threads: 0 };
  const plan = planTranscodes(['360p-video', '360p-wm-video', '720p-video'], info(), { watermark: true });

  it('one decode split into a scaler per encode; the watermark overlaid bottom right', () => {
    expect(encodeFilterGraph(plan.encodes, true)).toBe(
      '[0:v]split=3[s0][s1][s2];[1:v]format=rgba,colorchannelmixer=aa=0.7,split=1[w1];' +
        '[s0]scale=640:360,setsar=1[v0];[s1]scale=640:360,setsar=1[b1];[w1]scale=128:-2[m1];' +
        '[b1][m1]overlay=main_w-overlay_w-11:main_h-overlay_h-11:eof_action=repeat[v1];[s2]scale=1280:720,setsar=1[v2]',
    );
    expect(() => encodeFilterGraph(plan.encodes, false)).toThrow('watermark');
  });

  it('maps each output with key frames on segment boundaries, audio only when there is some', () => {
    const args = encodeArgs({ source: 'in', watermark: 'wm', encodes: plan.encodes, outputs: ['a', 'b', 'c'], hasAudio: false, settings });
    expect(args.slice(0, 4)).toEqual(['-i', 'in', '-i', 'wm']);
    expect(args.filter((a) => a === '-an')).toHaveLength(3);
    expect(args).toContain('expr:gte(t,n_forced*4)');
    expect(args[args.length - 1]).toBe('c');
    expect(() => encodeArgs({ source: 'in', encodes: plan.encodes, outputs: ['a'], hasAudio: true, settings })).toThrow('one output per encode');
  });
});

describe('keysOf', () => {
  it('the profile and the automatic addons, or exactly what was asked', () => {
    const settings = { conversions: { profile: { video: ['360p-video', 'storyboard'] } }, addons: { auto: { video: ['storyboard'] } } };
    expect(keysOf(settings)).toEqual(['360p-video', 'storyboard']);
    expect(keysOf(settings, ['hls-video'])).toEqual(['hls-video']);
    expect(keysOf({})).toEqual([]);
  });
});
