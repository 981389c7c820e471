import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import type { operations } from '@dam/client';
import type { AssetData } from '../lib/asset';
import { conversionsOf } from '../lib/asset';
import {
  FITS,
  FORMATS,
  hasTransform,
  initialLinkForm,
  isImageKey,
  linkErrors,
  linkQuery,
  transformsApply,
  type LinkErrors,
  type LinkField,
  type LinkForm,
} from '../lib/link-builder';
import { api, errorText, type Session } from '../session';

const EXPIRIES: { value: string; label: string }[] = [
  { value: '3600', label: '1 hour' },
  { value: '86400', label: '1 day' },
  { value: '604800', label: '1 week' },
  { value: 'MAX', label: 'As long as possible' },
];

/** Typing in a number field asks for one link when it pauses, not one per key press. */
const DEBOUNCE_MS = 300;

type GetLinkQuery = NonNullable<operations['getLink']['parameters']['query']>;

type Result = { state: 'pending' } | { state: 'ok'; url: string } | { state: 'error'; errors: LinkErrors };

const fieldId = (f: LinkField) => `link-${f.replace('_', '-')}`;

/** One labelled control with the API's message about it underneath (`aria-describedby`). */
function Field({ name, label, error, children }: { name: LinkField; label: string; error?: string | undefined; children: ComponentChildren }) {
  return (
    <div class="field" data-link-field={name}>
      <label for={fieldId(name)}>{label}</label>
      {children}
      {error && (
        <span id={`${fieldId(name)}-error`} class="error" role="alert">
          {error}
        </span>
      )}
    </div>
  );
}

/** The id and `aria-*` of a control: its error, when it has one. */
const described = (name: LinkField, error: string | undefined) => ({
  id: fieldId(name),
  'aria-invalid': error ? true : undefined,
  'aria-describedby': error ? `${fieldId(name)}-error` : undefined,
});

/**
 * Get Link as a form (CONTRACT §7, §15): link type, delivery, expiry and, for `cdn` links of image keys, size, fit,
 * format and quality. The signed URL is asked for as the form changes (debounced; an older answer never replaces
 * a newer one), shown with a copy button and, for a `cdn` link of an image, as the image the edge serves for it.
 */
export function LinkBuilder({ session, asset }: { session: Session; asset: AssetData }) {
  const keys = ['original', ...Object.keys(conversionsOf(asset)).sort()];
  const [form, setForm] = useState<LinkForm>(initialLinkForm);
  const [result, setResult] = useState<Result>({ state: 'pending' });
  const [shown, setShown] = useState<{ url: string; picture: boolean }>();
  const [copied, setCopied] = useState<string>();
  const [rendered, setRendered] = useState<{ url: string; width: number; height: number } | { url: string; failed: true }>();
  const output = useRef<HTMLInputElement>(null);

  const imageKey = isImageKey(form.key, asset);
  const applies = transformsApply(form, imageKey);
  const query = linkQuery(form, imageKey);
  const queryKey = JSON.stringify(query);

  useEffect(() => {
    let alive = true;
    // Only a cdn link of an image is shown as a picture (the console's CSP allows images from {cdn} alone).
    const picture = form.link_type === 'cdn' && imageKey;
    setResult({ state: 'pending' });
    setCopied(undefined);
    const timer = setTimeout(() => {
      api(session)
        .GET('/api/v1/assets/{asset_id}/get_link', {
          // The transform parameters (CONTRACT §15) go through as given: the API checks them.
          params: { path: { asset_id: asset.id }, query: query as GetLinkQuery },
        })
        .then(({ data, error }) => {
          if (!alive) return;
          if (data) {
            setResult({ state: 'ok', url: data.url });
            setShown({ url: data.url, picture });
          } else setResult({ state: 'error', errors: linkErrors(error) });
        })
        .catch((err: unknown) => alive && setResult({ state: 'error', errors: { fields: {}, general: errorText(err) } }));
    }, DEBOUNCE_MS);
    return () => {
      alive = false;
      clearTimeout(timer);
    };
  }, [asset.id, asset.update_time, queryKey]);

  const set = <K extends keyof LinkForm>(k: K, v: LinkForm[K]) => setForm((f) => ({ ...f, [k]: v }));
  const errors = result.state === 'error' ? result.errors.fields : {};
  const url = result.state === 'error' ? undefined : shown?.url;
  const current = result.state === 'ok' ? result.url : undefined;
  // While the next link is being made, the last one stays in view (no flicker on every key press).
  const picture = url && shown?.picture && form.link_type === 'cdn' && imageKey ? url : undefined;

  const copy = async () => {
    if (!current) return;
    try {
      await navigator.clipboard.writeText(current);
    } catch {
      // No clipboard API (an insecure origin) or no permission: the selected text copied the old way.
      output.current?.select();
      if (!document.execCommand('copy')) throw new Error('Copying is not allowed here: select the link and copy it');
    }
    setCopied('Link copied');
  };

  return (
    <form onSubmit={(e) => e.preventDefault()} aria-labelledby="link-heading" class="link-builder">
      <h3 id="link-heading">Get a link</h3>
      <div class="row">
        <Field name="key" label="File" error={errors.key}>
          <select {...described('key', errors.key)} value={form.key} onChange={(e) => set('key', e.currentTarget.value)}>
            {keys.map((k) => (
              <option key={k} value={k}>
                {k}
              </option>
            ))}
          </select>
        </Field>
        <Field name="link_type" label="Link type" error={errors.link_type}>
          <select
            {...described('link_type', errors.link_type)}
            value={form.link_type}
            onChange={(e) => set('link_type', e.currentTarget.value as LinkForm['link_type'])}
          >
            <option value="cdn">cdn (signed, through the edge)</option>
            <option value="object_storage">object_storage (presigned)</option>
          </select>
        </Field>
        <Field name="delivery" label="Opens as" error={errors.delivery}>
          <select
            {...described('delivery', errors.delivery)}
            value={form.delivery}
            onChange={(e) => set('delivery', e.currentTarget.value as LinkForm['delivery'])}
          >
            <option value="display">a page view</option>
            <option value="download">a download</option>
          </select>
        </Field>
        <Field name="expiry" label="Valid for" error={errors.expiry}>
          <select {...described('expiry', errors.expiry)} value={form.expiry} onChange={(e) => set('expiry', e.currentTarget.value)}>
            {EXPIRIES.map((x) => (
              <option key={x.value} value={x.value}>
                {x.label}
              </option>
            ))}
          </select>
        </Field>
      </div>

      <fieldset class="plain" disabled={!applies} aria-describedby="link-transform-help">
        <legend>
          <strong>Transform</strong>
        </legend>
        <p id="link-transform-help" class="muted">
          {applies
            ? 'Empty fields are left out; the edge makes the image once and serves it from then on.'
            : form.link_type === 'object_storage'
              ? 'Transforms apply to cdn links only.'
              : `Transforms apply to images only: ${form.key} is not one.`}
        </p>
        <div class="row">
          <Field name="w" label="Width (px)" error={errors.w}>
            <input {...described('w', errors.w)} type="number" min={1} max={8192} step={1} value={form.w} onInput={(e) => set('w', e.currentTarget.value)} />
          </Field>
          <Field name="h" label="Height (px)" error={errors.h}>
            <input {...described('h', errors.h)} type="number" min={1} max={8192} step={1} value={form.h} onInput={(e) => set('h', e.currentTarget.value)} />
          </Field>
          <Field name="fit" label="Fit" error={errors.fit}>
            <select {...described('fit', errors.fit)} value={form.fit} onChange={(e) => set('fit', e.currentTarget.value as LinkForm['fit'])}>
              <option value="">(default)</option>
              {FITS.map((f) => (
                <option key={f} value={f}>
                  {f}
                </option>
              ))}
            </select>
          </Field>
          <Field name="format" label="Format" error={errors.format}>
            <select {...described('format', errors.format)} value={form.format} onChange={(e) => set('format', e.currentTarget.value as LinkForm['format'])}>
              <option value="">(as stored)</option>
              {FORMATS.map((f) => (
                <option key={f} value={f}>
                  {f === 'auto' ? 'auto (from the browser)' : f}
                </option>
              ))}
            </select>
          </Field>
          <Field name="q" label="Quality (1-100)" error={errors.q}>
            <input {...described('q', errors.q)} type="number" min={1} max={100} step={1} value={form.q} onInput={(e) => set('q', e.currentTarget.value)} />
          </Field>
        </div>
        {!applies && hasTransform(form) && <p class="muted">The transform fields above are not part of this link.</p>}
      </fieldset>

      <div class="field">
        <label for="link-output">Signed link</label>
        <input
          id="link-output"
          ref={output}
          class="link-output"
          readOnly
          value={url ?? ''}
          placeholder={result.state === 'error' ? 'No link: see the message' : 'Making the link…'}
          data-state={result.state}
          aria-busy={result.state === 'pending'}
          onFocus={(e) => e.currentTarget.select()}
        />
        <div class="row">
          <button type="button" class="secondary" disabled={!current} onClick={() => void copy().then(undefined, (err: unknown) => setCopied(errorText(err)))}>
            Copy link
          </button>
          {copied && (
            <span role="status" class="muted">
              {copied}
            </span>
          )}
        </div>
      </div>
      {result.state === 'error' && result.errors.general && (
        <p class="notice error" role="alert">
          {result.errors.general}
        </p>
      )}
      {picture && (
        <figure class="link-picture">
          <img
            key={picture}
            src={picture}
            alt={`${form.key} of ${asset.name} as this link serves it`}
            data-link-picture={rendered?.url === picture ? ('failed' in rendered ? 'failed' : 'loaded') : 'loading'}
            onLoad={(e) => setRendered({ url: picture, width: e.currentTarget.naturalWidth, height: e.currentTarget.naturalHeight })}
            onError={() => setRendered({ url: picture, failed: true })}
          />
          <figcaption class="muted">
            {rendered?.url !== picture
              ? 'Loading…'
              : 'failed' in rendered
                ? 'The edge did not serve an image for this link.'
                : `${rendered.width} × ${rendered.height} px`}
          </figcaption>
        </figure>
      )}
    </form>
  );
}
