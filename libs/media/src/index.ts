export {
  DEFAULT_STALL_MS,
  Ffmpeg,
  installerTools,
  progressSeconds,
  resolveTools,
  ToolFailedError,
  ToolStalledError,
  type FfmpegTools,
  type RunOptions,
} from './ffmpeg';
export { NoVideoStreamError, UnprocessableVideoError } from './errors';
export { parseRate, videoInfoFrom, videoMetadata, type VideoInfo } from './video-info';
