import { useEffect, useState } from 'preact/hooks';
import { conversionsOf, type AssetData } from '../lib/asset';
import { conversionKind } from '../lib/conversions';
import { faceBoxes, faceImageKey } from '../lib/face-boxes';
import { singleLink } from '../lib/links';
import { api, errorText, type Session } from '../session';
import { HlsPlayer } from './hls-player';
import './usage.css';

/** The original's upright size (Get Data `metadata.width`/`height`), where face_recognition's boxes are measured. */
const naturalOf = (asset: AssetData) => {
  const m = (asset.metadata ?? {}) as { width?: unknown; height?: unknown };
  return { width: typeof m.width === 'number' ? m.width : 0, height: typeof m.height === 'number' ? m.height : 0 };
};

/** Whether the page has faces to draw: face_recognition has a result for this image. */
export const hasFaces = (asset: AssetData): boolean =>
  asset.content_type.startsWith('image/') && !!(asset.addons_info as Record<string, { available?: boolean }> | undefined)?.face_recognition?.available;

/**
 * face_recognition's boxes drawn on the image: an SVG in a 0-100 viewBox stretched over the picture, so each box
 * stays on its face at any displayed size (lib/face-boxes.ts scales them); the names are listed under it too.
 */
export function FaceBoxes({ session, asset }: { session: Session; asset: AssetData }) {
  const natural = naturalOf(asset);
  const key = faceImageKey(conversionsOf(asset), asset.content_type, asset.size, natural);
  const [url, setUrl] = useState<string>();
  const [result, setResult] = useState<unknown>();
  const [error, setError] = useState<string>();

  useEffect(() => {
    const client = api(session);
    client
      .GET('/api/v1/assets/{asset_id}/addons/{addon}', { params: { path: { asset_id: asset.id, addon: 'face_recognition' } } })
      .then(({ data, error: err }) => (data ? setResult(data) : setError(errorText(err))))
      .catch((err: unknown) => setError(errorText(err)));
    if (key)
      singleLink(client, { id: asset.id, key, version: asset.update_time })
        .then(setUrl)
        .catch((err: unknown) => setError(errorText(err)));
  }, [asset.id, asset.update_time, key]);

  if (error)
    return (
      <p class="notice error" role="alert">
        {error}
      </p>
    );
  if (!result) return <p class="muted">Loading…</p>;
  const boxes = faceBoxes(result, natural);
  return (
    <>
      {url ? (
        <figure class="face-figure" data-faces={boxes.length}>
          <img src={url} alt={`${asset.name} with ${boxes.length} face${boxes.length === 1 ? '' : 's'} marked`} />
          <svg class="face-overlay" viewBox="0 0 100 100" preserveAspectRatio="none" aria-hidden="true">
            {boxes.map((b, i) => (
              <rect key={i} x={b.x} y={b.y} width={b.width} height={b.height} vector-effect="non-scaling-stroke" data-face={i}>
                <title>{b.label}</title>
              </rect>
            ))}
          </svg>
        </figure>
      ) : (
        <p class="muted">No picture of this image in its own proportions to draw the boxes on.</p>
      )}
      <ol>
        {boxes.length === 0 && <li>No face found.</li>}
        {boxes.map((b, i) => (
          <li key={i}>{b.label}</li>
        ))}
      </ol>
    </>
  );
}

/**
 * A video's player and storyboard together: the `hls-video` stream when there is one (else the first MP4
 * rendition), and the storyboard's sprite sheet (the addon's frames, one picture).
 */
export function VideoExtras({ session, asset }: { session: Session; asset: AssetData }) {
  const conv = conversionsOf(asset);
  const keys = Object.keys(conv).sort();
  const hls = keys.includes('hls-video') ? 'hls-video' : undefined;
  const mp4 = keys.find((k) => conversionKind(k, asset.content_type) === 'video');
  const playKey = hls ?? mp4;
  const board = keys.includes('storyboard') ? 'storyboard' : undefined;
  const [urls, setUrls] = useState<{ play?: string; board?: string }>({});
  const [error, setError] = useState<string>();

  useEffect(() => {
    const client = api(session);
    if (playKey)
      singleLink(client, { id: asset.id, key: playKey, version: asset.update_time })
        .then((u) => setUrls((o) => ({ ...o, play: u })))
        .catch((err: unknown) => setError(errorText(err)));
    if (board)
      singleLink(client, { id: asset.id, key: board, version: asset.update_time })
        .then((u) => setUrls((o) => ({ ...o, board: u })))
        .catch((err: unknown) => setError(errorText(err)));
  }, [asset.id, asset.update_time, playKey, board]);

  return (
    <>
      {error && (
        <p class="notice error" role="alert">
          {error}
        </p>
      )}
      {!playKey && <p class="muted">{asset.status === 'NOT_READY' ? 'Processing…' : 'No playable rendition yet.'}</p>}
      {playKey && !urls.play && <p class="muted">Loading…</p>}
      {urls.play &&
        (hls ? (
          <HlsPlayer url={urls.play} label={asset.name} />
        ) : (
          <video src={urls.play} controls preload="metadata" aria-label={`${playKey} of ${asset.name}`} />
        ))}
      <h3>Storyboard</h3>
      {board ? (
        urls.board ? (
          <div class="storyboard">
            <img src={urls.board} alt={`Storyboard of ${asset.name}: frames across the video`} loading="lazy" />
          </div>
        ) : (
          <p class="muted">Loading…</p>
        )
      ) : (
        <p class="muted">No storyboard yet (the storyboard addon makes one).</p>
      )}
    </>
  );
}
