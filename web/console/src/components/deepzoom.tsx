import { useEffect, useRef, useState } from 'preact/hooks';

type Viewer = {
  destroy(): void;
  viewport: { zoomBy(f: number): void; goHome(): void; applyConstraints(): void };
  addHandler(event: string, handler: () => void): void;
};

/**
 * A Deep Zoom viewer (OpenSeadragon, loaded when first needed) on a signed `cdn` link to `image.dzi`: the tiles
 * sit next to it with the same signed query (CONTRACT §5, §7). Its own buttons instead of OpenSeadragon's image
 * buttons (nothing is fetched from elsewhere); the arrow keys, + and − work once the viewer has the focus.
 */
export function DeepZoomViewer({ url, label }: { url: string; label: string }) {
  const host = useRef<HTMLDivElement>(null);
  const viewer = useRef<Viewer>();
  const [state, setState] = useState<'loading' | 'open' | 'failed'>('loading');

  useEffect(() => {
    let alive = true;
    void import('openseadragon').then(({ default: OpenSeadragon }) => {
      if (!alive || !host.current) return;
      const v = OpenSeadragon({
        element: host.current,
        tileSources: url,
        drawer: 'canvas',
        crossOriginPolicy: 'Anonymous',
        showNavigationControl: false,
        showNavigator: false,
        gestureSettingsMouse: { clickToZoom: false },
      }) as unknown as Viewer;
      v.addHandler('open', () => alive && setState('open'));
      v.addHandler('open-failed', () => alive && setState('failed'));
      viewer.current = v;
    });
    return () => {
      alive = false;
      viewer.current?.destroy();
      viewer.current = undefined;
    };
  }, [url]);

  const zoom = (f: number) => {
    viewer.current?.viewport.zoomBy(f);
    viewer.current?.viewport.applyConstraints();
  };
  return (
    <figure class="deepzoom" aria-label={`Deep zoom view of ${label}`}>
      <div class="row">
        <button type="button" class="secondary" onClick={() => zoom(1.5)}>
          Zoom in
        </button>
        <button type="button" class="secondary" onClick={() => zoom(1 / 1.5)}>
          Zoom out
        </button>
        <button type="button" class="secondary" onClick={() => viewer.current?.viewport.goHome()}>
          Fit
        </button>
        <span class="muted" role="status" data-deepzoom-state={state}>
          {state === 'loading' ? 'Loading tiles…' : state === 'failed' ? 'The deep zoom image could not be opened' : 'Drag to pan, scroll to zoom'}
        </span>
      </div>
      <div ref={host} class="viewer" data-testid="deepzoom-viewer" />
    </figure>
  );
}
