import { useState } from 'preact/hooks';
import { thumbhashDataUrl } from '../lib/thumbhash';

/**
 * A thumbnail: the thumbhash placeholder (a data: URL made here) at once, the signed picture fading in over it
 * once loaded; a label of the file's kind when there is neither. Decorative: the card's text names the asset.
 */
export function Thumb({ url, thumbhash, label }: { url?: string | undefined; thumbhash?: unknown; label: string }) {
  const [loaded, setLoaded] = useState<string>();
  const [failed, setFailed] = useState<string>();
  const placeholder = thumbhashDataUrl(thumbhash);
  const showUrl = url && failed !== url ? url : undefined;
  const ready = showUrl !== undefined && loaded === showUrl;
  return (
    <div class="thumb">
      {placeholder && !ready && <img class="placeholder" src={placeholder} alt="" />}
      {showUrl && (
        <img
          class={ready ? 'picture' : 'picture pending'}
          src={showUrl}
          alt=""
          loading="lazy"
          data-loaded={ready ? 'true' : 'false'}
          onLoad={() => setLoaded(showUrl)}
          onError={() => setFailed(showUrl)}
        />
      )}
      {!placeholder && !showUrl && (
        <span class="kind" aria-hidden="true">
          {label}
        </span>
      )}
    </div>
  );
}
