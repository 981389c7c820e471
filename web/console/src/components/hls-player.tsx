import { useEffect, useRef, useState } from 'preact/hooks';

/**
 * The `hls-video` conversion in a <video>: natively where the browser plays HLS, else through hls.js (loaded when
 * first needed, worker off: the CSP allows no blob: worker) on a signed `cdn` link to master.m3u8, whose entries
 * are signed too (CONTRACT §5).
 */
export function HlsPlayer({ url, label }: { url: string; label: string }) {
  const video = useRef<HTMLVideoElement>(null);
  const [error, setError] = useState<string>();
  // loading → manifest (the playlists were read) → playable (the first frame decoded); or error.
  const [state, setState] = useState<'loading' | 'manifest' | 'playable' | 'error'>('loading');

  useEffect(() => {
    const el = video.current;
    if (!el) return;
    const onData = () => setState('playable');
    el.addEventListener('loadeddata', onData);
    if (el.canPlayType('application/vnd.apple.mpegurl')) {
      el.src = url;
      return () => el.removeEventListener('loadeddata', onData);
    }
    let destroy: (() => void) | undefined;
    let alive = true;
    void import('hls.js').then(({ default: Hls }) => {
      if (!alive) return;
      if (!Hls.isSupported()) {
        setState('error');
        setError('This browser cannot play HLS');
        return;
      }
      const hls = new Hls({ enableWorker: false });
      hls.on(Hls.Events.MANIFEST_PARSED, () => setState((s) => (s === 'loading' ? 'manifest' : s)));
      hls.on(Hls.Events.ERROR, (_e, data) => {
        if (!data.fatal) return;
        setState('error');
        setError(`Playback failed: ${data.details}`);
      });
      hls.loadSource(url);
      hls.attachMedia(el);
      destroy = () => hls.destroy();
    });
    return () => {
      alive = false;
      el.removeEventListener('loadeddata', onData);
      destroy?.();
    };
  }, [url]);

  return (
    <div data-hls-state={state}>
      <video ref={video} class="player" controls preload="metadata" aria-label={`Video: ${label}`} />
      {error && (
        <p class="error-text" role="alert">
          {error}
        </p>
      )}
    </div>
  );
}
