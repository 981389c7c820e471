import { useEffect, useState } from 'preact/hooks';
import { Addons } from '../components/addons';
import { AssetActions } from '../components/asset-actions';
import { Conversions } from '../components/conversions';
import { DataEditor } from '../components/data-editor';
import { FaceBoxes, hasFaces, VideoExtras } from '../components/media-extras';
import { SimilarImages } from '../components/similar-images';
import { StatusBadge } from '../components/status';
import type { ConsoleConfig } from '../config';
import { conversionsOf, type AssetData } from '../lib/asset';
import { previewKey } from '../lib/conversions';
import { formatBytes, formatTime, formatValue } from '../lib/format';
import { singleLink } from '../lib/links';
import { thumbhashDataUrl } from '../lib/thumbhash';
import { Link } from '../router';
import { api, can, errorText, type Session } from '../session';
import { handler } from '../lib/handler';

const POLL_MS = 2000;

type Load = { state: 'loading' } | { state: 'ok'; asset: AssetData } | { state: 'trash' } | { state: 'error'; message: string };

function Preview({ session, asset }: { session: Session; asset: AssetData }) {
  // Not before processing is done: an original still NOT_READY may not be linkable yet.
  const key = asset.status === 'OK' ? previewKey(conversionsOf(asset), asset.content_type, asset.size) : undefined;
  const [url, setUrl] = useState<string>();
  useEffect(() => {
    setUrl(undefined);
    if (!key) return;
    singleLink(api(session), { id: asset.id, key, version: asset.update_time })
      .then(setUrl)
      .catch(() => setUrl(undefined));
  }, [asset.id, asset.update_time, key]);
  const placeholder = thumbhashDataUrl(asset.metadata?.thumbhash);
  const src = url ?? placeholder;
  if (!src) return <p class="muted">{asset.status === 'NOT_READY' ? 'Processing…' : 'No picture of this file.'}</p>;
  return <img src={src} alt={`Preview of ${asset.name}`} data-preview={url ? key : 'thumbhash'} />;
}

function Details({ asset }: { asset: AssetData }) {
  const meta = Object.entries((asset.metadata ?? {}) as Record<string, unknown>).filter(([k]) => k !== 'thumbhash');
  const rows: [string, string][] = [
    ['Id', asset.id],
    ['Type', asset.content_type],
    ['Size', `${formatBytes(asset.size)} (${asset.size} bytes)`],
    ['Checksum (MD5)', asset.checksum],
    ['Uploaded by', `user ${asset.creator_id}`],
    ['Uploaded', formatTime(asset.upload_time)],
    ['Updated', formatTime(asset.update_time)],
    ...meta.map(([k, v]): [string, string] => [k, formatValue(v)]),
    ...Object.entries(asset.errors ?? {}).map(([k, v]): [string, string] => [`Error (${k})`, v]),
  ];
  return <dl class="details">{rows.map(([k, v]) => [<dt key={`t-${k}`}>{k}</dt>, <dd key={`d-${k}`}>{v}</dd>])}</dl>;
}

/** One asset: Get Data, its custom data, conversions with previews and players, addon results, actions. */
export function AssetPage({ session, id }: { session: Session; config: ConsoleConfig; id: string }) {
  const [load, setLoad] = useState<Load>({ state: 'loading' });
  const [tick, setTick] = useState(0);
  const [notice, setNotice] = useState<string>();

  useEffect(() => {
    let alive = true;
    api(session)
      .GET('/api/v1/assets/{asset_id}/data', { params: { path: { asset_id: id } } })
      .then(({ data, error, response }) => {
        if (!alive) return;
        if (data) setLoad({ state: 'ok', asset: data });
        else if (response.status === 404 && (error as { error?: { code?: string } } | undefined)?.error?.code === 'ASSET_IN_TRASH') setLoad({ state: 'trash' });
        else setLoad({ state: 'error', message: errorText(error) });
      })
      .catch((err: unknown) => alive && setLoad({ state: 'error', message: errorText(err) }));
    return () => {
      alive = false;
    };
  }, [id, tick]);

  const pending = load.state === 'ok' && load.asset.status === 'NOT_READY';
  useEffect(() => {
    if (!pending) return;
    const t = setTimeout(() => setTick((x) => x + 1), POLL_MS);
    return () => clearTimeout(t);
  }, [pending, load]);

  const undelete = async () => {
    const { data, error } = await api(session).POST('/api/v1/assets/trash/{asset_id}/undelete', {
      params: { path: { asset_id: id } },
      body: { keys: ['original'] },
    });
    if (data) {
      setNotice('Restored from the trash');
      setTick((x) => x + 1);
    } else setNotice(errorText(error));
  };

  if (load.state === 'loading') return <p>Loading…</p>;
  if (load.state === 'error')
    return (
      <>
        <h1>Asset</h1>
        <p class="notice error" role="alert">
          {load.message}
        </p>
        <Link href="/">Back to the assets</Link>
      </>
    );
  if (load.state === 'trash')
    return (
      <>
        <h1>Asset in the trash</h1>
        <p>This asset ({id}) is in the trash.</p>
        {(can(session, 'DELETE_ASSET') || can(session, 'DELETE_OWN_ASSET')) && (
          <button type="button" onClick={handler(undelete, (err) => setNotice(errorText(err)))}>
            Undelete
          </button>
        )}
        {notice && (
          <p class="notice" role="status">
            {notice}
          </p>
        )}
        <p>
          <Link href="/">Back to the assets</Link>
        </p>
      </>
    );

  const { asset } = load;
  const editable = can(session, 'EDIT_ASSET') || (asset.creator_id === session.userId && can(session, 'EDIT_OWN_ASSET'));
  return (
    <>
      <p>
        <Link href="/">← Assets</Link>
      </p>
      <h1>{asset.name}</h1>
      <p>
        Status: <StatusBadge status={asset.status} />
      </p>
      {notice && (
        <p class="notice ok" role="status">
          {notice}
        </p>
      )}
      <div class="asset-layout">
        <div>
          <section class="panel preview" aria-label="Preview">
            <Preview session={session} asset={asset} />
          </section>
          <section class="panel" aria-labelledby="conv-heading">
            <h2 id="conv-heading">Conversions</h2>
            <Conversions session={session} asset={asset} />
          </section>
          <section class="panel" aria-labelledby="addons-heading">
            <h2 id="addons-heading">Addons</h2>
            <Addons session={session} asset={asset} />
          </section>
          {asset.content_type.startsWith('video/') && (
            <section class="panel" aria-labelledby="video-heading">
              <h2 id="video-heading">Video</h2>
              <VideoExtras session={session} asset={asset} />
            </section>
          )}
          {hasFaces(asset) && (
            <section class="panel" aria-labelledby="faces-heading">
              <h2 id="faces-heading">Faces</h2>
              <FaceBoxes session={session} asset={asset} />
            </section>
          )}
          {asset.content_type.startsWith('image/') && (
            <section class="panel" aria-labelledby="similar-heading">
              <h2 id="similar-heading">Similar images</h2>
              <SimilarImages session={session} asset={asset} />
            </section>
          )}
        </div>
        <div>
          <section class="panel" aria-labelledby="actions-heading">
            <h2 id="actions-heading">Actions</h2>
            <AssetActions
              session={session}
              asset={asset}
              onDeleted={() => {
                setNotice(undefined);
                setLoad({ state: 'trash' });
              }}
            />
          </section>
          <section class="panel" aria-labelledby="data-heading">
            <h2 id="data-heading">Custom data</h2>
            <DataEditor session={session} asset={asset} editable={editable} onSaved={(a) => setLoad({ state: 'ok', asset: a })} />
          </section>
          <section class="panel" aria-labelledby="details-heading">
            <h2 id="details-heading">Details</h2>
            <Details asset={asset} />
          </section>
        </div>
      </div>
    </>
  );
}
