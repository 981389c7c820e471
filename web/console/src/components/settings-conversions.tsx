import { useEffect, useState } from 'preact/hooks';
import type { AssetData } from '../lib/asset';
import { handler } from '../lib/handler';
import { runSearch } from '../lib/search';
import { conversionNameProblems, FITS, FORMATS, numberOf, previewQuery, type CustomConversion, type Settings } from '../lib/settings-form';
import { api, errorText, type Session } from '../session';
import { describedBy, FormField } from './form-field';
import { useSettingsSave } from './settings-save';
import { ErrorNotice } from './status';

interface Draft {
  name: string;
  width: string;
  height: string;
  fit: string;
  format: string;
  quality: string;
  inProfile: boolean;
}
const EMPTY: Draft = { name: '', width: '', height: '', fit: 'cover', format: 'webp', quality: '80', inProfile: true };

function conversionOf(d: Draft): CustomConversion {
  const c: CustomConversion = { fit: d.fit, format: d.format, quality: numberOf(d.quality) ?? 80 };
  const w = numberOf(d.width);
  const h = numberOf(d.height);
  if (w !== undefined) c.width = w;
  if (h !== undefined) c.height = h;
  return c;
}

/**
 * The custom conversion on an image the user picks, made by Get Conversion with the same w, h, fit, format and q
 * on demand (what processing would store under its name, without storing anything).
 */
function Preview({ session, conversion }: { session: Session; conversion: CustomConversion }) {
  const [images, setImages] = useState<AssetData[]>();
  const [assetId, setAssetId] = useState('');
  const [shown, setShown] = useState<{ url: string; size?: string }>();
  const [error, setError] = useState<string>();
  useEffect(() => {
    runSearch(api(session), { q: '', types: [], statuses: [], sort: 'upload_time:desc', page: 1 })
      .then((p) => {
        const found = p.results.filter((a) => a.status === 'OK' && String(a.content_type ?? '').startsWith('image/'));
        setImages(found);
        setAssetId((cur) => cur || (found[0]?.id ?? ''));
      })
      .catch((err: unknown) => setError(errorText(err)));
  }, [session]);
  useEffect(() => () => shown && URL.revokeObjectURL(shown.url), [shown]);

  const show = async () => {
    setError(undefined);
    const res = await fetch(`/api/v1/assets/${encodeURIComponent(assetId)}/conversions/original?${previewQuery(conversion)}`, {
      headers: { authorization: `Bearer ${session.jwt}` },
    });
    if (!res.ok) {
      setShown(undefined);
      setError(errorText(await res.json().catch(() => undefined), `Get Conversion answered ${res.status}`));
      return;
    }
    setShown({ url: URL.createObjectURL(await res.blob()) });
  };
  return (
    <section class="panel" aria-labelledby="conv-preview-heading">
      <h3 id="conv-preview-heading">Preview on an image</h3>
      {images && images.length === 0 && <p class="muted">No image is ready to preview on: upload one first.</p>}
      {images && images.length > 0 && (
        <div class="row">
          <FormField id="conv-preview-asset" label="Image">
            <select {...describedBy('conv-preview-asset', undefined)} value={assetId} onChange={(e) => setAssetId(e.currentTarget.value)}>
              {images.map((a) => (
                <option key={a.id} value={a.id}>
                  {a.name ?? a.id}
                </option>
              ))}
            </select>
          </FormField>
          <div class="field">
            <button type="button" class="secondary" disabled={!assetId} onClick={handler(show, (err) => setError(errorText(err)))}>
              Preview
            </button>
          </div>
        </div>
      )}
      <ErrorNotice text={error} />
      {shown && (
        <figure class="link-picture">
          <img
            src={shown.url}
            alt="The conversion as it would be made"
            data-preview="conversion"
            onLoad={(e) => {
              const img = e.currentTarget;
              setShown((s) => (s && s.url === img.src ? { ...s, size: `${img.naturalWidth} × ${img.naturalHeight}` } : s));
            }}
          />
          {shown.size && <figcaption class="muted">{shown.size} px</figcaption>}
        </figure>
      )}
    </section>
  );
}

/** Custom conversions: the list, add, edit (a new name renames it), remove, each saved with the image profile. */
export function ConversionsSection({ session, settings, onSaved }: { session: Session; settings: Settings; onSaved: (s: Settings) => void }) {
  const s = useSettingsSave(session, settings, onSaved);
  const [draft, setDraft] = useState<Draft>(EMPTY);
  const [editing, setEditing] = useState<string>();
  const custom = settings.conversions.custom;
  const profile = settings.conversions.profile.image;
  const set = <K extends keyof Draft>(k: K, v: Draft[K]) => setDraft((d) => ({ ...d, [k]: v }));
  const name = draft.name;
  const base = name ? `conversions.custom.${name}` : 'conversions.custom';
  // Messages about the entry as a whole: about its name when the name is refused, else "width or height is required".
  const entryError = s.errors[base];
  const nameRefused = conversionNameProblems(name).length > 0;
  const nameError = [
    nameRefused || !name ? entryError : undefined,
    editing === undefined && custom[name] ? `${name} already exists: edit it instead` : undefined,
  ]
    .filter(Boolean)
    .join('; ');

  const submit = async (e: Event) => {
    e.preventDefault();
    if (editing === undefined && custom[name]) return s.fail(new Error(`${name} already exists: edit it instead`));
    const next = { ...custom };
    if (editing !== undefined && editing !== name) delete next[editing];
    next[name] = conversionOf(draft);
    const renamed = profile.map((k) => (k === editing ? name : k));
    const image = draft.inProfile ? [...new Set([...renamed, name])] : renamed.filter((k) => k !== name);
    if (await s.save({ conversions: { custom: next, profile: { image } } }, `${name} saved`)) {
      setDraft(EMPTY);
      setEditing(undefined);
    } else document.querySelector<HTMLElement>('#conversions [aria-invalid="true"]')?.focus();
  };
  const edit = (key: string) => {
    const c = custom[key];
    if (!c) return;
    setEditing(key);
    setDraft({
      name: key,
      width: c.width === undefined ? '' : String(c.width),
      height: c.height === undefined ? '' : String(c.height),
      fit: c.fit,
      format: c.format,
      quality: String(c.quality),
      inProfile: profile.includes(key),
    });
    document.getElementById('conv-name')?.focus();
  };
  const remove = async (key: string) => {
    const next = { ...custom };
    delete next[key];
    await s.save({ conversions: { custom: next, profile: { image: profile.filter((k) => k !== key) } } }, `${key} removed`);
  };
  const names = Object.keys(custom).sort();
  const err = (k: string) => s.at(`${base}.${k}`);
  return (
    <section class="panel" id="conversions" aria-labelledby="conversions-heading">
      <h2 id="conversions-heading">Custom conversions</h2>
      <p class="muted">
        Made from every image on upload when they are in the image profile; at most 50. Names are 1-30 letters or digits and cannot be a built-in key.
      </p>
      {names.length === 0 ? (
        <p>No custom conversions.</p>
      ) : (
        <table class="stack">
          <caption class="muted">{names.length} / 50</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Size</th>
              <th scope="col">Fit</th>
              <th scope="col">Format</th>
              <th scope="col">Quality</th>
              <th scope="col">Image profile</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {names.map((k) => {
              const c = custom[k] as CustomConversion;
              return (
                <tr key={k} data-conversion={k}>
                  <th scope="row">{k}</th>
                  <td data-label="Size">
                    {c.width ?? 'auto'} × {c.height ?? 'auto'}
                  </td>
                  <td data-label="Fit">{c.fit}</td>
                  <td data-label="Format">{c.format}</td>
                  <td data-label="Quality">{c.quality}</td>
                  <td data-label="Image profile">{profile.includes(k) ? 'yes' : 'no'}</td>
                  <td data-label="Actions">
                    <span class="row-actions">
                      <button type="button" class="secondary" aria-label={`Edit ${k}`} onClick={() => edit(k)}>
                        Edit
                      </button>
                      <button type="button" class="danger" aria-label={`Remove ${k}`} disabled={s.busy} onClick={handler(() => remove(k), s.fail)}>
                        Remove
                      </button>
                    </span>
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
      <form noValidate aria-labelledby="conv-form-heading" onSubmit={handler(submit, s.fail)}>
        <h3 id="conv-form-heading">{editing === undefined ? 'Add a conversion' : `Edit ${editing}`}</h3>
        <div class="row">
          <FormField id="conv-name" label="Name" error={nameError || undefined}>
            <input
              {...describedBy('conv-name', nameError || undefined)}
              value={draft.name}
              autoComplete="off"
              onInput={(e) => set('name', e.currentTarget.value)}
            />
          </FormField>
          <FormField
            id="conv-width"
            label="Width (px)"
            error={[err('width'), !nameRefused && name ? entryError : undefined].filter(Boolean).join('; ') || undefined}
          >
            <input
              {...describedBy('conv-width', err('width') ?? (!nameRefused && name ? entryError : undefined))}
              type="number"
              min={1}
              max={8192}
              step={1}
              value={draft.width}
              onInput={(e) => set('width', e.currentTarget.value)}
            />
          </FormField>
          <FormField id="conv-height" label="Height (px)" error={err('height')}>
            <input
              {...describedBy('conv-height', err('height'))}
              type="number"
              min={1}
              max={8192}
              step={1}
              value={draft.height}
              onInput={(e) => set('height', e.currentTarget.value)}
            />
          </FormField>
          <FormField id="conv-fit" label="Fit" error={err('fit')}>
            <select {...describedBy('conv-fit', err('fit'))} value={draft.fit} onChange={(e) => set('fit', e.currentTarget.value)}>
              {FITS.map((f) => (
                <option key={f}>{f}</option>
              ))}
            </select>
          </FormField>
          <FormField id="conv-format" label="Format" error={err('format')}>
            <select {...describedBy('conv-format', err('format'))} value={draft.format} onChange={(e) => set('format', e.currentTarget.value)}>
              {FORMATS.map((f) => (
                <option key={f}>{f}</option>
              ))}
            </select>
          </FormField>
          <FormField id="conv-quality" label="Quality (1-100)" error={err('quality')}>
            <input
              {...describedBy('conv-quality', err('quality'))}
              type="number"
              min={1}
              max={100}
              step={1}
              value={draft.quality}
              onInput={(e) => set('quality', e.currentTarget.value)}
            />
          </FormField>
        </div>
        <div class="checks">
          <label>
            <input type="checkbox" checked={draft.inProfile} onChange={(e) => set('inProfile', e.currentTarget.checked)} /> Make it for every image (image
            profile)
          </label>
        </div>
        {s.at('conversions.profile') && <p class="error-text block">{s.at('conversions.profile')}</p>}
        <div class="row">
          <button type="submit" disabled={s.busy}>
            {editing === undefined ? 'Add conversion' : 'Save conversion'}
          </button>
          {editing !== undefined && (
            <button
              type="button"
              class="secondary"
              onClick={() => {
                setEditing(undefined);
                setDraft(EMPTY);
              }}
            >
              Cancel
            </button>
          )}
          <span role="status" class="muted">
            {s.status}
          </span>
        </div>
        <ErrorNotice text={s.general} />
      </form>
      <Preview session={session} conversion={conversionOf(draft)} />
    </section>
  );
}
