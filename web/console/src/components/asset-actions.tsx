import { useEffect, useState } from 'preact/hooks';
import type { AssetData } from '../lib/asset';
import { processKeys } from '../lib/conversions';
import { singleLink } from '../lib/links';
import { Link } from '../router';
import { api, can, errorText, type Session } from '../session';
import { handler } from '../lib/handler';
import { ConfirmButton } from './confirm-button';
import { LinkBuilder } from './link-builder';

/** Download, the link builder, Process and Delete (to the trash) for one asset. */
export function AssetActions({ session, asset, onDeleted }: { session: Session; asset: AssetData; onDeleted: () => void }) {
  const own = asset.creator_id === session.userId;
  const [message, setMessage] = useState<{ text: string; error?: boolean; jobId?: number }>();
  const [custom, setCustom] = useState<string[]>([]);
  const [chosen, setChosen] = useState<string[]>([]);

  useEffect(() => {
    if (!asset.content_type.startsWith('image/')) return;
    api(session)
      .GET('/api/v1/settings')
      .then(({ data }) => setCustom(Object.keys(data?.conversions.custom ?? {})))
      .catch(() => setCustom([]));
  }, []);

  const fail = (err: unknown) => setMessage({ text: errorText(err), error: true });

  const download = async () => {
    try {
      const url = await singleLink(api(session), { id: asset.id, key: 'original', version: asset.update_time, delivery: 'download', expiry: '300' });
      window.location.assign(url);
    } catch (err) {
      fail(err);
    }
  };

  const process = async (e: Event) => {
    e.preventDefault();
    if (chosen.length === 0) return;
    const { data, error } = await api(session).POST('/api/v1/assets/{asset_id}/process', { params: { path: { asset_id: asset.id } }, body: { keys: chosen } });
    if (data) setMessage({ text: `Processing ${chosen.join(', ')} as job ${data.job_id}`, jobId: data.job_id });
    else fail(error);
  };

  const remove = async () => {
    const { data, error } = await api(session).POST('/api/v1/assets/{asset_id}/delete', {
      params: { path: { asset_id: asset.id } },
      body: { keys: ['original'] },
    });
    if (data) onDeleted();
    else fail(error);
  };

  const offered = processKeys(asset.content_type, custom);
  return (
    <div class="actions">
      <div class="row">
        <button type="button" onClick={handler(download, fail)}>
          Download original
        </button>
      </div>

      <LinkBuilder session={session} asset={asset} />

      {offered.length > 0 && can(session, 'RUN_JOBS') && (
        <form onSubmit={handler(process, fail)}>
          <fieldset class="plain">
            <legend>
              <strong>Process</strong> <span class="muted">(make these outputs again)</span>
            </legend>
            <div class="checks">
              {offered.map((k) => (
                <label key={k}>
                  <input
                    type="checkbox"
                    checked={chosen.includes(k)}
                    onChange={() => setChosen((c) => (c.includes(k) ? c.filter((x) => x !== k) : [...c, k]))}
                  />
                  {k}
                </label>
              ))}
            </div>
          </fieldset>
          <button type="submit" class="secondary" disabled={chosen.length === 0 || asset.status !== 'OK'}>
            Process
          </button>
        </form>
      )}

      {(can(session, 'DELETE_ASSET') || (own && can(session, 'DELETE_OWN_ASSET'))) && (
        <div class="row">
          <ConfirmButton label="Delete" question={`Move ${asset.name} to the trash?`} confirm="Yes, delete" onConfirm={remove} onError={fail} />
        </div>
      )}

      {message && (
        <p class={message.error ? 'notice error' : 'notice'} role="status">
          {message.text} {message.jobId !== undefined && <Link href="/jobs">See jobs</Link>}
        </p>
      )}
    </div>
  );
}
