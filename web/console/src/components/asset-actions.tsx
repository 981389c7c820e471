import { useEffect, useState } from 'preact/hooks';
import type { AssetData } from '../lib/asset';
import { conversionsOf } from '../lib/asset';
import { processKeys } from '../lib/conversions';
import { singleLink } from '../lib/links';
import { Link } from '../router';
import { api, can, errorText, type Session } from '../session';
import { handler } from '../lib/handler';
import { ConfirmButton } from './confirm-button';

const EXPIRIES: { value: string; label: string }[] = [
  { value: '3600', label: '1 hour' },
  { value: '86400', label: '1 day' },
  { value: '604800', label: '1 week' },
  { value: 'MAX', label: 'As long as possible' },
];

/** Download, Get Link, Process and Delete (to the trash) for one asset. */
export function AssetActions({ session, asset, onDeleted }: { session: Session; asset: AssetData; onDeleted: () => void }) {
  const own = asset.creator_id === session.userId;
  const keys = ['original', ...Object.keys(conversionsOf(asset)).sort()];
  const [linkKey, setLinkKey] = useState('original');
  const [expiry, setExpiry] = useState('3600');
  const [delivery, setDelivery] = useState<'download' | 'display'>('download');
  const [link, setLink] = useState<string>();
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

  const getLink = async (e: Event) => {
    e.preventDefault();
    setLink(undefined);
    try {
      setLink(await singleLink(api(session), { id: asset.id, key: linkKey, version: asset.update_time, delivery, expiry }));
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

      <form onSubmit={handler(getLink, fail)} aria-labelledby="link-heading">
        <h3 id="link-heading">Get a link</h3>
        <div class="row">
          <div class="field">
            <label for="link-key">File</label>
            <select id="link-key" value={linkKey} onChange={(e) => setLinkKey(e.currentTarget.value)}>
              {keys.map((k) => (
                <option key={k} value={k}>
                  {k}
                </option>
              ))}
            </select>
          </div>
          <div class="field">
            <label for="link-expiry">Valid for</label>
            <select id="link-expiry" value={expiry} onChange={(e) => setExpiry(e.currentTarget.value)}>
              {EXPIRIES.map((x) => (
                <option key={x.value} value={x.value}>
                  {x.label}
                </option>
              ))}
            </select>
          </div>
          <div class="field">
            <label for="link-delivery">Opens as</label>
            <select id="link-delivery" value={delivery} onChange={(e) => setDelivery(e.currentTarget.value as 'download' | 'display')}>
              <option value="download">a download</option>
              <option value="display">a page view</option>
            </select>
          </div>
          <div class="field">
            <button type="submit" class="secondary">
              Get link
            </button>
          </div>
        </div>
        {link && (
          <div class="field">
            <label for="link-output">Signed link</label>
            <input id="link-output" class="link-output" readOnly value={link} onFocus={(e) => e.currentTarget.select()} />
            <div class="row">
              <button
                type="button"
                class="secondary"
                onClick={() => void navigator.clipboard?.writeText(link).then(() => setMessage({ text: 'Link copied' }), fail)}
              >
                Copy link
              </button>
            </div>
          </div>
        )}
      </form>

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
