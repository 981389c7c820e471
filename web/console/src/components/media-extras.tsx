import { useEffect, useRef, useState } from 'preact/hooks';
import { conversionsOf, type AssetData } from '../lib/asset';
import { conversionKind } from '../lib/conversions';
import { faceBoxes, faceImageKey } from '../lib/face-boxes';
import { singleLink } from '../lib/links';
import { clock, parseStoryboardVtt, spriteSize, type StoryboardFrame } from '../lib/storyboard';
import { api, errorText, type Session } from '../session';
import './usage.css';
import { ErrorNotice } from './status';

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
 * A video's player and storyboard together: an MP4 rendition (or an MP4/WebM original) in a <video> (the hls-video
 * stream plays under Conversions), and the storyboard addon's frames (its cue file over the sprite), each a button
 * that seeks the player to its time.
 */
export function VideoExtras({ session, asset }: { session: Session; asset: AssetData }) {
  const conv = conversionsOf(asset);
  const keys = Object.keys(conv).sort();
  // A rendition, else the original when a browser plays it as it is.
  const mp4 =
    keys.find((k) => conversionKind(k, asset.content_type) === 'video') ?? (['video/mp4', 'video/webm'].includes(asset.content_type) ? 'original' : undefined);
  const board = keys.includes('storyboard');
  const [playUrl, setPlayUrl] = useState<string>();
  const [sprite, setSprite] = useState<string>();
  const [frames, setFrames] = useState<StoryboardFrame[]>();
  const [error, setError] = useState<string>();
  const video = useRef<HTMLVideoElement>(null);

  useEffect(() => {
    const client = api(session);
    if (mp4)
      singleLink(client, { id: asset.id, key: mp4, version: asset.update_time })
        .then(setPlayUrl)
        .catch((err: unknown) => setError(errorText(err)));
    if (!board) return;
    singleLink(client, { id: asset.id, key: 'storyboard', version: asset.update_time })
      .then(setSprite)
      .catch((err: unknown) => setError(errorText(err)));
    client
      .GET('/api/v1/assets/{asset_id}/content/{key}/{file_path}', {
        params: { path: { asset_id: asset.id, key: 'storyboard', file_path: 'storyboard.vtt' } },
        parseAs: 'text',
      })
      .then(({ data, error: err }) => (typeof data === 'string' ? setFrames(parseStoryboardVtt(data)) : setError(errorText(err))))
      .catch((err: unknown) => setError(errorText(err)));
  }, [asset.id, asset.update_time, mp4, board]);

  const seek = (t: number) => {
    const el = video.current;
    if (!el) return;
    el.currentTime = t;
    el.focus();
  };
  const size = frames ? spriteSize(frames) : undefined;
  return (
    <>
      <ErrorNotice text={error} />
      {mp4 ? (
        playUrl ? (
          <video ref={video} class="video-main" src={playUrl} controls preload="metadata" aria-label={`${mp4} of ${asset.name}`} data-video-key={mp4} />
        ) : (
          <p class="muted">Loading…</p>
        )
      ) : (
        <p class="muted">{asset.status === 'NOT_READY' ? 'Processing…' : 'No MP4 rendition yet; a stream (hls-video) plays under Conversions.'}</p>
      )}
      <h3>Storyboard</h3>
      {!board && <p class="muted">No storyboard yet (the storyboard addon makes one).</p>}
      {board && (!frames || !sprite) && !error && <p class="muted">Loading…</p>}
      {board && frames && sprite && size && (
        <ul class="storyboard" aria-label={`Storyboard of ${asset.name}: ${frames.length} frames`}>
          {frames.map((f) => (
            <li key={`${f.start}-${f.x}-${f.y}`}>
              <button type="button" class="frame" disabled={!playUrl} onClick={() => seek(f.start)} aria-label={`Play from ${clock(f.start)}`}>
                <svg viewBox={`${f.x} ${f.y} ${f.w} ${f.h}`} aria-hidden="true" width={f.w} height={f.h}>
                  <image href={sprite} x={0} y={0} width={size.width} height={size.height} />
                </svg>
                <span>{clock(f.start)}</span>
              </button>
            </li>
          ))}
        </ul>
      )}
    </>
  );
}
