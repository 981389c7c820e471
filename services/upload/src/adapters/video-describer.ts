import { NoVideoStreamError, videoInfoFrom, videoMetadata, type Ffmpeg } from '@dam/media';
import type { Logger } from '@dam/logging';
import type { Storage } from '@dam/storage';
import type { StoredDescriber } from '../domain/ports';

/**
 * A stored video's metadata (duration, size as displayed, codecs, bit rate, frame rate) read by ffprobe over a
 * short-lived presigned URL: ffprobe fetches only the ranges it needs, the upload does not read the file again.
 * Anything ffprobe cannot say leaves the metadata as it was: the transcode job reads the video again and
 * reports what is wrong with it; an upload never fails for this.
 */
export function storedVideoDescriber(deps: { storage: Storage; ffmpeg: Ffmpeg; logger: Logger }): StoredDescriber {
  return async (objectKey, contentType) => {
    if (!contentType.toLowerCase().startsWith('video/')) return {};
    try {
      const url = await deps.storage.presignGet(objectKey, 300);
      return videoMetadata(videoInfoFrom(await deps.ffmpeg.probe(url)));
    } catch (error) {
      // Sound without picture: described as such (transcode will skip every key).
      if (error instanceof NoVideoStreamError && error.audio) return { ...error.audio, video_codec: null };
      deps.logger.warn({ object_key: objectKey, err: { message: error instanceof Error ? error.message : String(error) } }, 'video not described at upload');
      return {};
    }
  };
}
