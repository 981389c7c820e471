import { useEffect, useState } from 'preact/hooks';
import type { AssetData } from '../lib/asset';
import { Link } from '../router';
import { SelectField } from './form-field';
import { api, can, errorText, type Session } from '../session';
import { handler } from '../lib/handler';

type AddonName = 'auto_tagging' | 'text_extraction' | 'background_removal' | 'face_recognition' | 'storyboard';
const IMAGE_ADDONS: AddonName[] = ['auto_tagging', 'text_extraction', 'face_recognition', 'background_removal'];
const VIDEO_ADDONS: AddonName[] = ['storyboard'];
const isAddon = (k: string): k is AddonName => (IMAGE_ADDONS as string[]).includes(k) || (VIDEO_ADDONS as string[]).includes(k);

function AddonResult({ name, result }: { name: AddonName; result: Record<string, unknown> }) {
  if (name === 'auto_tagging' && Array.isArray(result.labels)) {
    const labels = result.labels as { label?: unknown; confidence?: unknown }[];
    return (
      <ul>
        {labels.map((l, i) => (
          <li key={i}>
            {String(l.label)} {typeof l.confidence === 'number' ? <span class="muted">({Math.round(l.confidence * 100)} %)</span> : null}
          </li>
        ))}
      </ul>
    );
  }
  if (name === 'text_extraction' && typeof result.text === 'string') return <pre>{result.text || '(no text found)'}</pre>;
  if (name === 'face_recognition' && Array.isArray(result.faces)) {
    const faces = result.faces as { person_id?: unknown; confidence?: unknown }[];
    return (
      <p>
        {faces.length} face{faces.length === 1 ? '' : 's'}
        {faces.length > 0 && `: ${faces.map((f) => `person ${String(f.person_id)}`).join(', ')}`}
      </p>
    );
  }
  return <pre>{JSON.stringify(result, null, 2)}</pre>;
}

/** What the addons found (`addons_info`, then each result), and a way to run one. */
export function Addons({ session, asset }: { session: Session; asset: AssetData }) {
  const info = (asset.addons_info ?? {}) as Record<string, { available?: boolean }>;
  const available = Object.entries(info)
    .filter(([k, v]) => isAddon(k) && v.available)
    .map(([k]) => k as AddonName);
  const [results, setResults] = useState<Record<string, Record<string, unknown> | string>>({});
  const runnable = asset.content_type.startsWith('image/') ? IMAGE_ADDONS : asset.content_type.startsWith('video/') ? VIDEO_ADDONS : [];
  const [choice, setChoice] = useState<AddonName | ''>(runnable[0] ?? '');
  const [message, setMessage] = useState<{ text: string; jobId?: number; error?: boolean }>();

  useEffect(() => {
    for (const name of available) {
      api(session)
        .GET('/api/v1/assets/{asset_id}/addons/{addon}', { params: { path: { asset_id: asset.id, addon: name } } })
        .then(({ data, error }) => setResults((r) => ({ ...r, [name]: data ? (data as Record<string, unknown>) : errorText(error) })))
        .catch((err: unknown) => setResults((r) => ({ ...r, [name]: errorText(err) })));
    }
  }, [asset.id, asset.update_time, available.join(',')]);

  const run = async (e: Event) => {
    e.preventDefault();
    if (!choice) return;
    const { data, error } = await api(session).POST('/api/v1/assets/{asset_id}/addons/{addon}', {
      params: { path: { asset_id: asset.id, addon: choice } },
      body: {},
    });
    setMessage(data ? { text: `${choice} queued as job ${data.job_id}`, jobId: data.job_id } : { text: errorText(error), error: true });
  };

  return (
    <>
      {available.length === 0 && <p class="muted">No addon results yet.</p>}
      {available.map((name) => (
        <section key={name} data-addon={name}>
          <h3>{name.replace('_', ' ')}</h3>
          {typeof results[name] === 'string' ? (
            <p class="error-text">{results[name]}</p>
          ) : results[name] ? (
            <AddonResult name={name} result={results[name]} />
          ) : (
            <p class="muted">Loading…</p>
          )}
        </section>
      ))}
      {runnable.length > 0 && can(session, 'RUN_JOBS') && (
        <form class="row" onSubmit={handler(run, (err) => setMessage({ text: errorText(err), error: true }))}>
          <SelectField id="addon-choice" label="Run an addon" value={choice} options={runnable} onChange={setChoice} />
          <div class="field">
            <button type="submit" class="secondary" disabled={asset.status !== 'OK'}>
              Run
            </button>
          </div>
        </form>
      )}
      {message && (
        <p class={message.error ? 'notice error' : 'notice'} role="status">
          {message.text} {message.jobId !== undefined && <Link href="/jobs">See jobs</Link>}
        </p>
      )}
    </>
  );
}
