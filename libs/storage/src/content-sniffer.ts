import { fromBuffer } from 'file-type';
import { imageSize } from 'image-size';

/** How much of the start of a file is kept for sniffing the type and reading image dimensions. */
export const HEAD_BYTES = 1024 * 1024;

const utf8 = new TextDecoder('utf-8', { fatal: true });

function looksLikeText(head: Buffer, truncated: boolean): boolean {
  if (head.length === 0) return false;
  // A cut at the head's end may split a multi-byte character; judge only complete ones.
  const sample = truncated ? head.subarray(0, Math.max(0, head.length - 3)) : head;
  if (sample.includes(0)) return false;
  try {
    utf8.decode(sample);
    return true;
  } catch {
    return false;
  }
}

/** The type from the magic bytes; the client's Content-Type is never trusted. */
export async function sniffContentType(head: Buffer, truncated: boolean): Promise<string> {
  const detected = await fromBuffer(head);
  if (detected) return detected.mime;
  return looksLikeText(head, truncated) ? 'text/plain' : 'application/octet-stream';
}

/** Width and height of an image from its first bytes; {} when they cannot be read (or it is no image). */
export function imageMetadata(head: Buffer, contentType: string): { width?: number; height?: number } {
  if (!contentType.startsWith('image/')) return {};
  try {
    const size = imageSize(head);
    if (size.width === undefined || size.height === undefined) return {};
    // EXIF orientations 5-8 rotate by 90°: report the size as displayed.
    const rotated = size.orientation !== undefined && size.orientation >= 5;
    return rotated ? { width: size.height, height: size.width } : { width: size.width, height: size.height };
  } catch {
    return {};
  }
}
