import { useEffect, useState } from 'preact/hooks';
import type { AssetData } from '../lib/asset';
import { conversionsOf } from '../lib/asset';
import { conversionKind, type ConversionKind } from '../lib/conversions';
import { formatBytes } from '../lib/format';
import { singleLink } from '../lib/links';
import { api, errorText, type Session } from '../session';
import { DeepZoomViewer } from './deepzoom';
import { HlsPlayer } from './hls-player';

function Preview({ session, asset, convKey, kind }: { session: Session; asset: AssetData; convKey: string; kind: ConversionKind }) {
  const [url, setUrl] = useState<string>();
  const [error, setError] = useState<string>();
  const [open, setOpen] = useState(false);
  const eager = kind === 'image' || kind === 'storyboard' || kind === 'video';

  useEffect(() => {
    if (!eager && !open) return;
    singleLink(api(session), { id: asset.id, key: convKey, version: asset.update_time })
      .then(setUrl)
      .catch((err: unknown) => setError(errorText(err)));
  }, [asset.id, asset.update_time, convKey, open]);

  if (error) return <span class="error-text">{error}</span>;
  switch (kind) {
    case 'image':
    case 'storyboard':
      return url ? <img src={url} alt={`${convKey} of ${asset.name}`} loading="lazy" /> : <span class="muted">Loading…</span>;
    case 'video':
      return url ? <video src={url} controls preload="none" aria-label={`${convKey} of ${asset.name}`} /> : <span class="muted">Loading…</span>;
    case 'deepzoom':
    case 'hls':
      if (!open)
        return (
          <button type="button" class="secondary" onClick={() => setOpen(true)}>
            {kind === 'deepzoom' ? 'Open deep zoom viewer' : 'Play HLS stream'}
          </button>
        );
      if (!url) return <span class="muted">Loading…</span>;
      return kind === 'deepzoom' ? <DeepZoomViewer url={url} label={asset.name} /> : <HlsPlayer url={url} label={asset.name} />;
    case 'other':
      return url ? (
        <a href={url} target="_blank" rel="noreferrer">
          Open {convKey}
        </a>
      ) : (
        <button type="button" class="secondary" onClick={() => setOpen(true)}>
          Get a link
        </button>
      );
  }
}

/** The asset's conversions: key, size, dimensions, and a preview (pictures, videos, deep zoom, HLS) of each. */
export function Conversions({ session, asset }: { session: Session; asset: AssetData }) {
  const entries = Object.entries(conversionsOf(asset)).sort(([a], [b]) => a.localeCompare(b));
  const wide = entries.filter(([key]) => ['deepzoom', 'hls'].includes(conversionKind(key, asset.content_type)));
  const narrow = entries.filter(([key]) => !['deepzoom', 'hls'].includes(conversionKind(key, asset.content_type)));
  if (entries.length === 0) return <p class="muted">No conversions yet.</p>;
  return (
    <>
      {narrow.length > 0 && (
        <table>
          <caption class="muted">Conversions of {asset.name}</caption>
          <thead>
            <tr>
              <th scope="col">Key</th>
              <th scope="col">Size</th>
              <th scope="col">Preview</th>
            </tr>
          </thead>
          <tbody>
            {narrow.map(([key, c]) => (
              <tr key={key} data-conversion={key}>
                <th scope="row">{key}</th>
                <td>
                  {c.width && c.height ? `${c.width} × ${c.height}, ` : ''}
                  {formatBytes(c.size)}
                  {c.public ? ', public' : ''}
                </td>
                <td class="conv-preview">
                  <Preview session={session} asset={asset} convKey={key} kind={conversionKind(key, asset.content_type)} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {wide.map(([key, c]) => (
        <section key={key} data-conversion={key} class="conv-wide">
          <h3>
            {key} <span class="muted">({formatBytes(c.size)})</span>
          </h3>
          <Preview session={session} asset={asset} convKey={key} kind={conversionKind(key, asset.content_type)} />
        </section>
      ))}
    </>
  );
}
