import { useEffect, useRef, useState } from 'preact/hooks';
import { formatTime } from '../lib/format';
import { handler } from '../lib/handler';
import { BUILTIN_IMAGE_KEYS, BUILTIN_VIDEO_KEYS, IMAGE_ADDONS, numberOf, urlLines, VIDEO_ADDONS, type Settings } from '../lib/settings-form';
import type { Session } from '../session';
import { ConfirmAction } from './confirm-action';
import { CopyButton } from './copy-button';
import { describedBy, FormField } from './form-field';
import { useSettingsSave, type SaveState } from './settings-save';
import { ErrorNotice } from './status';

interface SectionProps {
  session: Session;
  settings: Settings;
  onSaved: (s: Settings) => void;
}

const toggle = (list: string[], v: string, on: boolean) => (on ? [...new Set([...list, v])] : list.filter((x) => x !== v));

/** A group of checkboxes with its API path's message under it. */
function Checks({
  id,
  legend,
  options,
  chosen,
  error,
  onChange,
}: {
  id: string;
  legend: string;
  options: readonly string[];
  chosen: string[];
  error?: string | undefined;
  onChange: (l: string[]) => void;
}) {
  return (
    <fieldset class="plain" id={id} aria-describedby={error ? `${id}-error` : undefined}>
      <legend>{legend}</legend>
      <div class="checks">
        {options.map((o) => (
          <label key={o}>
            <input type="checkbox" name={id} value={o} checked={chosen.includes(o)} onChange={(e) => onChange(toggle(chosen, o, e.currentTarget.checked))} />{' '}
            {o}
          </label>
        ))}
      </div>
      {error && (
        <span id={`${id}-error`} class="error-text block" role="alert">
          {error}
        </span>
      )}
    </fieldset>
  );
}

function SaveRow({ s, label }: { s: SaveState; label: string }) {
  return (
    <>
      <div class="row">
        <button type="submit" disabled={s.busy}>
          {s.busy ? 'Saving…' : label}
        </button>
        <span role="status" class="muted">
          {s.status}
        </span>
      </div>
      <ErrorNotice text={s.general} />
    </>
  );
}

/** Which conversions every upload gets, per file type (the image profile may name custom conversions). */
export function ProfileSection({ session, settings, onSaved }: SectionProps) {
  const s = useSettingsSave(session, settings, onSaved);
  const [image, setImage] = useState(settings.conversions.profile.image);
  const [video, setVideo] = useState(settings.conversions.profile.video);
  useEffect(() => setImage(settings.conversions.profile.image), [settings.conversions.profile.image]);
  useEffect(() => setVideo(settings.conversions.profile.video), [settings.conversions.profile.video]);
  const imageKeys = [...BUILTIN_IMAGE_KEYS, ...Object.keys(settings.conversions.custom).sort()];
  return (
    <form
      class="panel"
      noValidate
      aria-labelledby="profile-heading"
      onSubmit={handler((e) => (e.preventDefault(), s.save({ conversions: { profile: { image, video } } }).then(() => undefined)), s.fail)}
    >
      <h2 id="profile-heading">Profile per file type</h2>
      <p class="muted">The conversions made for every new upload of each type.</p>
      <Checks id="profile-image" legend="Image keys" options={imageKeys} chosen={image} error={s.at('conversions.profile.image')} onChange={setImage} />
      <Checks
        id="profile-video"
        legend="Video keys"
        options={BUILTIN_VIDEO_KEYS}
        chosen={video}
        error={s.at('conversions.profile.video')}
        onChange={setVideo}
      />
      <SaveRow s={s} label="Save profile" />
    </form>
  );
}

/** The asset stamped on the -wm- video conversions. */
export function WatermarkSection({ session, settings, onSaved }: SectionProps) {
  const s = useSettingsSave(session, settings, onSaved);
  const [id, setId] = useState(settings.conversions.watermark_asset_id ?? '');
  const error = s.at('conversions.watermark_asset_id');
  const submit = (e: Event) => {
    e.preventDefault();
    return s.save({ conversions: { watermark_asset_id: id.trim() === '' ? null : id.trim() } }).then(() => undefined);
  };
  return (
    <form class="panel" noValidate aria-labelledby="watermark-heading" onSubmit={handler(submit, s.fail)}>
      <h2 id="watermark-heading">Watermark</h2>
      <FormField
        id="watermark-id"
        label="Watermark asset id"
        error={error}
        help="An image of your group (its 32-character id), stamped on the -wm- video conversions. Empty: none."
      >
        <input {...describedBy('watermark-id', error, true)} value={id} autoComplete="off" spellcheck={false} onInput={(e) => setId(e.currentTarget.value)} />
      </FormField>
      <SaveRow s={s} label="Save watermark" />
    </form>
  );
}

/** The addons run on every new upload. */
export function AddonsSection({ session, settings, onSaved }: SectionProps) {
  const s = useSettingsSave(session, settings, onSaved);
  const [image, setImage] = useState(settings.addons.auto.image);
  const [video, setVideo] = useState(settings.addons.auto.video);
  return (
    <form
      class="panel"
      noValidate
      aria-labelledby="addons-heading"
      onSubmit={handler((e) => (e.preventDefault(), s.save({ addons: { auto: { image, video } } }).then(() => undefined)), s.fail)}
    >
      <h2 id="addons-heading">Automatic addons</h2>
      <Checks id="addons-image" legend="For images" options={IMAGE_ADDONS} chosen={image} error={s.at('addons.auto.image')} onChange={setImage} />
      <Checks id="addons-video" legend="For videos" options={VIDEO_ADDONS} chosen={video} error={s.at('addons.auto.video')} onChange={setVideo} />
      <SaveRow s={s} label="Save addons" />
    </form>
  );
}

/** Webhook URLs, and the signing secret's rotation: the new one is shown once, the old one signs beside it for 24 hours. */
export function WebhooksSection({ session, settings, onSaved }: SectionProps) {
  const s = useSettingsSave(session, settings, onSaved);
  const rotation = useSettingsSave(session, settings, onSaved);
  const [urls, setUrls] = useState(settings.webhooks.urls.join('\n'));
  const [fresh, setFresh] = useState<string>();
  const secretInput = useRef<HTMLInputElement>(null);
  const error = s.at('webhooks.urls');
  // Remembers the secret that was replaced: the one the record holds now is shown while it differs (this page only).
  const rotate = async () => {
    const before = settings.webhooks.secret;
    setFresh(undefined);
    if (await rotation.save({ webhooks: { rotate_secret: true } }, 'Secret rotated')) setFresh(before);
  };
  // The secret after a rotation is the one the record now holds (not the one it had when rotate began).
  const newSecret = fresh !== undefined && settings.webhooks.secret !== fresh ? settings.webhooks.secret : undefined;
  useEffect(() => {
    if (newSecret) secretInput.current?.focus();
  }, [newSecret]);
  const expires = settings.webhooks.previous_secret_expires_at;
  return (
    <section class="panel" aria-labelledby="webhooks-heading">
      <h2 id="webhooks-heading">Webhooks</h2>
      <form
        noValidate
        aria-label="Webhook URLs"
        onSubmit={handler((e) => (e.preventDefault(), s.save({ webhooks: { urls: urlLines(urls) } }).then(() => undefined)), s.fail)}
      >
        <FormField
          id="webhook-urls"
          label="Webhook URLs"
          error={error}
          help="One URL a line, at most 10: https (plain http only for hosts the operator allow-lists), none inside the network."
        >
          <textarea {...describedBy('webhook-urls', error, true)} rows={3} value={urls} spellcheck={false} onInput={(e) => setUrls(e.currentTarget.value)} />
        </FormField>
        <SaveRow s={s} label="Save URLs" />
      </form>
      <h3>Signing secret</h3>
      <p>
        Every delivery is signed with the secret (Standard Webhooks). After a rotation the old secret keeps signing beside the new one (a second signature) for
        24 hours, so receivers can switch over without missing a delivery; then only the new one signs.
      </p>
      {expires && !newSecret && <p class="muted">The previous secret signs too until {formatTime(expires)}.</p>}
      {newSecret && (
        <div class="secret notice" data-secret="webhook">
          <FormField
            id="webhook-secret"
            label="New signing secret (shown once)"
            help={`Copy it to your receivers now: it is not shown again on this page. The old one signs too until ${expires ? formatTime(expires) : '24 hours from now'}.`}
          >
            <input
              ref={secretInput}
              {...describedBy('webhook-secret', undefined, true)}
              class="link-output"
              readOnly
              value={newSecret}
              onFocus={(e) => e.currentTarget.select()}
            />
          </FormField>
          <CopyButton text={newSecret} label="Copy secret" fallback={() => secretInput.current} />
        </div>
      )}
      <div class="row">
        <ConfirmAction
          label="Rotate secret"
          question="A new secret starts signing now; the current one signs beside it for 24 hours, then deliveries signed only with it stop. Rotate?"
          confirm="Yes, rotate"
          onConfirm={rotate}
          onError={rotation.fail}
        />
        <span role="status" class="muted">
          {rotation.status}
        </span>
      </div>
      <ErrorNotice text={rotation.general} />
    </section>
  );
}

/** Delete - Bulk's limits and export, and whether image metadata keeps GPS positions. */
export function LimitsSection({ session, settings, onSaved }: SectionProps) {
  const s = useSettingsSave(session, settings, onSaved);
  const [maxAssets, setMaxAssets] = useState(String(settings.bulk_delete.max_assets));
  const [maxDays, setMaxDays] = useState(String(settings.bulk_delete.max_range_days));
  const [exported, setExported] = useState(settings.bulk_delete.export);
  const [keepGps, setKeepGps] = useState(settings.metadata.keep_gps);
  const submit = (e: Event) => {
    e.preventDefault();
    const bulk: { export: boolean; max_assets?: number; max_range_days?: number } = { export: exported };
    const a = numberOf(maxAssets);
    const d = numberOf(maxDays);
    if (a !== undefined) bulk.max_assets = a;
    if (d !== undefined) bulk.max_range_days = d;
    return s.save({ bulk_delete: bulk, metadata: { keep_gps: keepGps } }).then(() => undefined);
  };
  const ea = s.at('bulk_delete.max_assets');
  const ed = s.at('bulk_delete.max_range_days');
  return (
    <form class="panel" noValidate aria-labelledby="limits-heading" onSubmit={handler(submit, s.fail)}>
      <h2 id="limits-heading">Bulk delete and metadata</h2>
      <div class="row">
        <FormField id="bulk-max-assets" label="Most assets per bulk delete" error={ea} help="1-100,000">
          <input
            {...describedBy('bulk-max-assets', ea, true)}
            type="number"
            min={1}
            max={100000}
            step={1}
            value={maxAssets}
            onInput={(e) => setMaxAssets(e.currentTarget.value)}
          />
        </FormField>
        <FormField id="bulk-max-days" label="Longest upload-date range (days)" error={ed} help="1-366">
          <input
            {...describedBy('bulk-max-days', ed, true)}
            type="number"
            min={1}
            max={366}
            step={1}
            value={maxDays}
            onInput={(e) => setMaxDays(e.currentTarget.value)}
          />
        </FormField>
      </div>
      <div class="checks">
        <label>
          <input type="checkbox" checked={exported} onChange={(e) => setExported(e.currentTarget.checked)} /> Keep the deleted assets' records with the bulk
          delete's job (export)
        </label>
        <label>
          <input type="checkbox" checked={keepGps} onChange={(e) => setKeepGps(e.currentTarget.checked)} /> Keep GPS positions in image metadata (keep_gps)
        </label>
      </div>
      <SaveRow s={s} label="Save limits" />
    </form>
  );
}
