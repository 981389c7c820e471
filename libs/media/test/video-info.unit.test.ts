import { NoVideoStreamError, parseRate, progressSeconds, UnprocessableVideoError, videoInfoFrom } from '../src';

describe('videoInfoFrom (ffprobe → one typed value)', () => {
  const probe = {
    format: { duration: '12.345678', bit_rate: '2500000' },
    streams: [
      { codec_type: 'video', codec_name: 'h264', width: 1920, height: 1080, avg_frame_rate: '30000/1001', side_data_list: [{ rotation: -90 }] },
      { codec_type: 'audio', codec_name: 'aac' },
    ],
  };

  it('normalises duration, codecs, bit rate and frame rate, with the displayed size of a rotated clip', () => {
    expect(videoInfoFrom(probe)).toEqual({
      duration: 12.346,
      width: 1080,
      height: 1920,
      video_codec: 'h264',
      audio_codec: 'aac',
      bitrate: 2_500_000,
      frame_rate: 29.97,
      hasAudio: true,
      rotation: 270,
    });
  });

  it('takes no audio, the old rotate tag and a stream duration when the format has none', () => {
    const v = videoInfoFrom({
      streams: [{ codec_type: 'video', codec_name: 'vp9', width: 640, height: 480, duration: '3.5', r_frame_rate: '25/1', tags: { rotate: '90' } }],
    });
    expect(v).toMatchObject({ duration: 3.5, width: 480, height: 640, audio_codec: null, hasAudio: false, bitrate: null, frame_rate: 25 });
  });

  it('refuses what is not a video: no video stream, only cover art, no duration', () => {
    expect(() => videoInfoFrom({ streams: [{ codec_type: 'audio', codec_name: 'mp3' }], format: { duration: '3' } })).toThrow(UnprocessableVideoError);
    const art = { codec_type: 'video', codec_name: 'mjpeg', width: 300, height: 300, disposition: { attached_pic: 1 } };
    expect(() => videoInfoFrom({ streams: [art], format: { duration: '3' } })).toThrow('no video stream');
    expect(() => videoInfoFrom({ streams: [{ codec_type: 'video', width: 2, height: 2 }], format: {} })).toThrow('no duration');
    expect(() => videoInfoFrom('nonsense')).toThrow(UnprocessableVideoError);
  });

  it('tells sound without picture apart, with what the audio is', () => {
    const error = (() => {
      try {
        videoInfoFrom({ streams: [{ codec_type: 'audio', codec_name: 'aac', duration: '4.5' }], format: { duration: '4.5', bit_rate: '128000' } });
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(NoVideoStreamError);
    expect(error).toBeInstanceOf(UnprocessableVideoError);
    expect((error as NoVideoStreamError).audio).toEqual({ duration: 4.5, audio_codec: 'aac', bitrate: 128000 });
    expect(() => videoInfoFrom({ streams: [], format: { duration: '1' } })).toThrow(expect.objectContaining({ audio: undefined }));
  });

  it('parses frame rates and rejects nonsense', () => {
    expect(parseRate('25/1')).toBe(25);
    expect(parseRate('24000/1001')).toBe(23.976);
    expect(parseRate('0/0')).toBeUndefined();
    expect(parseRate('abc')).toBeUndefined();
    expect(parseRate(undefined)).toBeUndefined();
  });
});

describe('ffmpeg progress', () => {
  it('reads the output time from -progress lines', () => {
    expect(progressSeconds('out_time_us=1500000')).toBe(1.5);
    expect(progressSeconds('out_time_ms=2000000')).toBe(2);
    expect(progressSeconds('out_time=00:00:01.500000')).toBeUndefined();
    expect(progressSeconds('out_time_us=N/A')).toBeUndefined();
  });
});
