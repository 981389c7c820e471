export const MASTER_PLAYLIST = 'master.m3u8';
export const VARIANT_PLAYLIST = 'index.m3u8';

export interface HlsVariant {
  /** Folder of the variant below the HLS key (`720p`), holding `index.m3u8` and its segments. */
  name: string;
  width: number;
  height: number;
  /** Peak and average bits per second over the segments. */
  bandwidth: number;
  averageBandwidth: number;
  /** RFC 6381 codecs (`avc1.64001f,mp4a.40.2`). */
  codecs: string;
}

const H264_PROFILES: Record<string, string> = {
  'constrained baseline': '42e0',
  baseline: '4200',
  main: '4d40',
  extended: '5800',
  high: '6400',
};

/** `avc1.PPCCLL` from ffprobe's profile name and level (`High`, 31 → `avc1.64001f`). */
export function avcCodecString(profile: string | undefined, level: number | undefined): string {
  const p = H264_PROFILES[(profile ?? '').toLowerCase()] ?? '6400';
  const l = level !== undefined && level > 0 && level < 256 ? level : 40;
  return `avc1.${p}${l.toString(16).padStart(2, '0')}`;
}

/** Segment file names and durations of a media playlist, in order. */
export function playlistSegments(playlist: string): Array<{ uri: string; duration: number }> {
  const out: Array<{ uri: string; duration: number }> = [];
  let duration: number | undefined;
  for (const raw of playlist.split('\n')) {
    const line = raw.trim();
    const inf = /^#EXTINF:([\d.]+)/.exec(line);
    if (inf) duration = Number(inf[1]);
    else if (line !== '' && !line.startsWith('#') && duration !== undefined) {
      out.push({ uri: line, duration });
      duration = undefined;
    }
  }
  return out;
}

/**
 * Peak and average bit rate of a variant from its segments (RFC 8216 §4.3.4.2: BANDWIDTH is the peak segment
 * bit rate). Segments shorter than a second count as a second, so a short tail does not inflate the peak.
 */
export function bandwidthOf(segments: ReadonlyArray<{ duration: number; bytes: number }>): { bandwidth: number; averageBandwidth: number } {
  let peak = 0;
  let bytes = 0;
  let seconds = 0;
  for (const s of segments) {
    peak = Math.max(peak, (s.bytes * 8) / Math.max(1, s.duration));
    bytes += s.bytes;
    seconds += s.duration;
  }
  return { bandwidth: Math.ceil(peak), averageBandwidth: Math.ceil(seconds > 0 ? (bytes * 8) / seconds : 0) };
}

/** The master playlist: every variant, smallest first, paths relative to the master. */
export function masterPlaylist(variants: readonly HlsVariant[]): string {
  const lines = ['#EXTM3U', '#EXT-X-VERSION:3', '#EXT-X-INDEPENDENT-SEGMENTS'];
  for (const v of [...variants].sort((a, b) => a.bandwidth - b.bandwidth)) {
    lines.push(
      `#EXT-X-STREAM-INF:BANDWIDTH=${v.bandwidth},AVERAGE-BANDWIDTH=${v.averageBandwidth},RESOLUTION=${v.width}x${v.height},CODECS="${v.codecs}"`,
      `${v.name}/${VARIANT_PLAYLIST}`,
    );
  }
  return `${lines.join('\n')}\n`;
}
