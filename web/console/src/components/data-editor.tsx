import { useEffect, useMemo, useState } from 'preact/hooks';
import type { components } from '@dam/client';
import type { AssetData } from '../lib/asset';
import { errorsFromDetails, fieldsFor, initialValues, readData, type FieldSpec, type FormValues } from '../lib/schema-form';
import { api, errorText, type Session } from '../session';
import { handler } from '../lib/handler';

type AssetSchema = components['schemas']['AssetSchema'];
const KEEP = 'keep';

/**
 * The schema whose form shows the data when the asset's own is not known (Get Data does not name it): the one
 * that describes most of the data's keys, schema 0 (the default) on a tie.
 */
function likelySchema(schemas: AssetSchema[], data: Record<string, unknown>): AssetSchema | undefined {
  const keys = Object.keys(data);
  let best: { s: AssetSchema; score: number } | undefined;
  for (const s of schemas) {
    const body = s.schema as unknown;
    const properties = typeof body === 'object' && body !== null ? (body as { properties?: unknown }).properties : undefined;
    const props = typeof properties === 'object' && properties !== null ? Object.keys(properties) : [];
    const score = keys.filter((k) => props.includes(k)).length;
    if (!best || score > best.score) best = { s, score };
  }
  return best?.s;
}

/** One field of the schema form (also the Schemas page's preview). */
export function Field({
  f,
  value,
  error,
  onChange,
}: {
  f: FieldSpec;
  value: string | boolean;
  error?: string | undefined;
  onChange: (v: string | boolean) => void;
}) {
  const id = `data-${f.name}`;
  const describedBy = [f.help ? `${id}-help` : '', error ? `${id}-error` : ''].filter(Boolean).join(' ') || undefined;
  const common = { id, 'aria-describedby': describedBy, 'aria-invalid': error ? true : undefined, required: f.required, name: f.name };
  const text = typeof value === 'string' ? value : '';
  let control;
  switch (f.widget) {
    case 'checkbox':
      control = <input {...common} type="checkbox" checked={value === true} onChange={(e) => onChange(e.currentTarget.checked)} />;
      break;
    case 'textarea':
    case 'json':
      control = (
        <textarea {...common} value={text} placeholder={f.placeholder} rows={f.widget === 'json' ? 4 : 3} onInput={(e) => onChange(e.currentTarget.value)} />
      );
      break;
    case 'select':
      control = (
        <select {...common} value={text} onChange={(e) => onChange(e.currentTarget.value)}>
          <option value="">(none)</option>
          {f.options?.map((o) => (
            <option key={String(o)} value={String(o)}>
              {String(o)}
            </option>
          ))}
        </select>
      );
      break;
    case 'readonly':
      control = <input {...common} type="text" value={text} readOnly />;
      break;
    case 'number':
    case 'integer':
      control = (
        <input
          {...common}
          type="number"
          step={f.widget === 'integer' ? 1 : 'any'}
          value={text}
          placeholder={f.placeholder}
          onInput={(e) => onChange(e.currentTarget.value)}
        />
      );
      break;
    case 'date':
      control = <input {...common} type="date" value={text} onInput={(e) => onChange(e.currentTarget.value)} />;
      break;
    default:
      control = (
        <input
          {...common}
          type="text"
          value={text}
          placeholder={f.placeholder ?? (f.widget === 'tags' ? 'Comma-separated' : undefined)}
          onInput={(e) => onChange(e.currentTarget.value)}
        />
      );
  }
  return (
    <div class="field" data-field={f.name}>
      <label for={id}>
        {f.label}
        {f.required ? ' (required)' : ''}
      </label>
      {control}
      {f.help && (
        <span id={`${id}-help`} class="help">
          {f.help}
        </span>
      )}
      {error && (
        <span id={`${id}-error`} class="error">
          {error}
        </span>
      )}
    </div>
  );
}

/**
 * The asset's custom data as a form (lib/schema-form.ts: the schema's fields with their `ui` hints, plus the keys
 * the data holds), saved with Update Data in REPLACE mode so an emptied field goes away. The server validates
 * against the schema; its `details` land next to their fields.
 */
export function DataEditor({ session, asset, editable, onSaved }: { session: Session; asset: AssetData; editable: boolean; onSaved: (a: AssetData) => void }) {
  const [schemas, setSchemas] = useState<AssetSchema[]>();
  const [schemaChoice, setSchemaChoice] = useState<string>(KEEP);
  const data = (asset.data ?? {}) as Record<string, unknown>;
  const [values, setValues] = useState<FormValues>({});
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [status, setStatus] = useState<{ text: string; error?: boolean }>();
  const [saving, setSaving] = useState(false);

  useEffect(() => {
    api(session)
      .GET('/api/v1/schemas', { params: { query: { page_size: 100 } } })
      .then(({ data: d }) => setSchemas(d?.items ?? []))
      .catch(() => setSchemas([]));
  }, []);

  const schema = schemaChoice === KEEP ? likelySchema(schemas ?? [], data) : schemas?.find((s) => String(s.schema_id) === schemaChoice);
  // Fields the user adds by name: a key neither the schema nor the data has yet (a text value).
  const [added, setAdded] = useState<string[]>([]);
  const [newName, setNewName] = useState('');
  const fields = useMemo(() => {
    const described = fieldsFor(schema?.schema, schema?.service_properties, data);
    const extra = added
      .filter((n) => !described.some((f) => f.name === n))
      .map((name, i): FieldSpec => ({ name, label: name, widget: 'text', required: false, order: 10_000 + i }));
    return [...described, ...extra];
  }, [schema, asset.update_time, added]);
  // A new version of the asset starts the form again; another schema's form keeps what was typed in fields it shares.
  useEffect(() => {
    setValues(initialValues(fields, data));
    setErrors({});
    setAdded([]);
  }, [asset.update_time]);
  useEffect(() => {
    setValues((old) => ({ ...initialValues(fields, data), ...Object.fromEntries(Object.entries(old).filter(([k]) => fields.some((f) => f.name === k))) }));
  }, [fields]);

  if (!schemas) return <p class="muted">Loading the data form…</p>;

  const save = async (e: Event) => {
    e.preventDefault();
    const read = readData(fields, values, data);
    setErrors(read.errors);
    if (Object.keys(read.errors).length) {
      setStatus({ text: 'Some values need fixing', error: true });
      return;
    }
    setSaving(true);
    setStatus(undefined);
    try {
      // The generated type reads `type: object` as an empty record; any JSON object is meant.
      const body = {
        data: read.data as Record<string, never>,
        mode: 'REPLACE' as const,
        ...(schemaChoice === KEEP ? {} : { data_schema_id: Number(schemaChoice) }),
      };
      const res = await api(session).POST('/api/v1/assets/{asset_id}/data/update', { params: { path: { asset_id: asset.id } }, body });
      if (res.response.status === 200 && res.data && 'id' in res.data && 'data' in res.data) {
        setStatus({ text: 'Saved' });
        onSaved(res.data);
      } else if (res.response.status === 202) {
        setStatus({ text: 'Saved: queued behind another update, applied in order' });
      } else {
        const details = (res.error as { error?: { details?: unknown } } | undefined)?.error?.details;
        const mapped = errorsFromDetails(details, fields);
        setErrors(mapped.byField);
        setStatus({ text: [errorText(res.error), ...mapped.other].join('; '), error: true });
      }
    } catch (err) {
      setStatus({ text: errorText(err), error: true });
    } finally {
      setSaving(false);
    }
  };

  const visible = fields.filter((f) => f.widget !== 'hidden');
  return (
    <form onSubmit={handler(save, (err) => setStatus({ text: errorText(err), error: true }))} aria-label="Custom data">
      <div class="field">
        <label for="data-schema">Schema</label>
        <select id="data-schema" value={schemaChoice} disabled={!editable} onChange={(e) => setSchemaChoice(e.currentTarget.value)}>
          <option value={KEEP}>Keep the asset's schema{schema && schemaChoice === KEEP ? ` (form of “${schema.name}”)` : ''}</option>
          {schemas.map((s) => (
            <option key={s.schema_id} value={String(s.schema_id)}>
              {s.schema_id}: {s.name}
            </option>
          ))}
        </select>
      </div>
      <fieldset disabled={!editable} class="plain">
        <legend class="muted">{editable ? 'Fields' : 'Fields (read only: you may not edit this asset)'}</legend>
        {visible.length === 0 && <p class="muted">This schema has no fields.</p>}
        {visible.map((f) => (
          <Field key={f.name} f={f} value={values[f.name] ?? ''} error={errors[f.name]} onChange={(v) => setValues((old) => ({ ...old, [f.name]: v }))} />
        ))}
      </fieldset>
      {editable && (
        <div class="row">
          <div class="field">
            <label for="data-new-field">New field</label>
            <input
              id="data-new-field"
              type="text"
              placeholder="A key, like camera"
              maxLength={100}
              value={newName}
              onInput={(e) => setNewName(e.currentTarget.value)}
            />
          </div>
          <div class="field">
            <button
              type="button"
              class="secondary"
              disabled={!newName.trim() || newName.trim().startsWith('_service') || fields.some((f) => f.name === newName.trim())}
              onClick={() => {
                setAdded((a) => [...a, newName.trim()]);
                setNewName('');
              }}
            >
              Add field
            </button>
          </div>
        </div>
      )}
      {editable && (
        <div class="row">
          <button type="submit" disabled={saving || asset.status === 'NOT_READY'}>
            {saving ? 'Saving…' : 'Save data'}
          </button>
          {status && (
            <span class={status.error ? 'error-text' : 'muted'} role="status">
              {status.text}
            </span>
          )}
        </div>
      )}
    </form>
  );
}
