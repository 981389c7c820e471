import { useEffect, useMemo, useState } from 'preact/hooks';
import type { components } from '@dam/client';
import { Field } from '../components/data-editor';
import { describedBy, FormField } from '../components/form-field';
import { counted, DataTable, usePagedList } from '../components/data-table';
import { formatTime } from '../lib/format';
import { handler } from '../lib/handler';
import { checkName, checkSchema, checkServiceProperties, loadSchemaCheck, parseJson, type Problem } from '../lib/schema-check';
import { fieldsFor, initialValues, type FormValues } from '../lib/schema-form';
import { apiErrors } from '../lib/settings-form';
import { api, can, errorText, type Session } from '../session';
import '../components/settings.css';
import { ErrorNotice } from '../components/status';

type AssetSchema = components['schemas']['AssetSchema'];
const PAGE_SIZE = 25;
const TEMPLATE = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object',
  properties: { title: { type: 'string', maxLength: 200 }, rating: { type: 'integer', minimum: 1, maximum: 5 } },
  required: ['title'],
};
const TEMPLATE_SP = { title: { searchable: true, ui: { label: 'Title', help: 'Shown in search results' } }, rating: { keyword: true } };

interface Draft {
  /** undefined: a new schema. */
  id?: number | undefined;
  name: string;
  schema: string;
  sp: string;
}

const pretty = (v: unknown) => JSON.stringify(v, null, 2);
const under = (problems: Problem[], head: string) => problems.filter((p) => p.path === head || p.path.startsWith(`${head}.`));
const words = (problems: Problem[]) => (problems.length > 0 ? problems.map((p) => `${p.path}: ${p.message}`).join('; ') : undefined);

/** What the browser finds wrong as the draft is typed: JSON first, then the API's rules for each part. */
function check(d: Draft): { problems: Problem[]; schema?: unknown; sp?: unknown } {
  const problems = [...checkName(d.name)];
  const schema = parseJson(d.schema);
  const sp = parseJson(d.sp.trim() === '' ? '{}' : d.sp);
  if (!schema.ok) problems.push({ path: 'schema', message: schema.message });
  else problems.push(...checkSchema(schema.value));
  if (!sp.ok) problems.push({ path: 'service_properties', message: sp.message });
  else problems.push(...checkServiceProperties(sp.value));
  return { problems, ...(schema.ok ? { schema: schema.value } : {}), ...(sp.ok ? { sp: sp.value } : {}) };
}

/** The form an asset page would show for this schema (lib/schema-form.ts), to try; nothing is saved from it. */
function FormPreview({ schema, sp }: { schema: unknown; sp: unknown }) {
  const fields = useMemo(() => fieldsFor(schema, sp, {}), [schema, sp]);
  const [values, setValues] = useState<FormValues>({});
  useEffect(() => setValues(initialValues(fields, {})), [fields]);
  return (
    <fieldset class="plain schema-preview" data-preview="schema-form">
      <legend>Form preview</legend>
      {fields.length === 0 && <p class="muted">The schema describes no properties: the form has no fields.</p>}
      {fields
        .filter((f) => f.widget !== 'hidden')
        .map((f) => (
          <Field key={f.name} f={f} value={values[f.name] ?? ''} onChange={(v) => setValues((vs) => ({ ...vs, [f.name]: v }))} />
        ))}
    </fieldset>
  );
}

function Editor({ session, draft: initial, onSaved, onClose }: { session: Session; draft: Draft; onSaved: (s: AssetSchema) => void; onClose: () => void }) {
  const [d, setD] = useState(initial);
  const [apiProblems, setApiProblems] = useState<Problem[]>([]);
  const [general, setGeneral] = useState<string>();
  const [busy, setBusy] = useState(false);
  const readOnly = d.id === 0 || !can(session, 'MANAGE_SCHEMAS');
  const checked = check(d);
  // The browser's findings as typed; the API's, from the last save, until the draft changes.
  const problems = apiProblems.length > 0 ? apiProblems : checked.problems;
  const set = <K extends keyof Draft>(k: K, v: Draft[K]) => {
    setApiProblems([]);
    setD((x) => ({ ...x, [k]: v }));
  };
  const nameError = words(under(problems, 'name'));
  const schemaError = words(under(problems, 'schema'));
  const spError = words(under(problems, 'service_properties'));

  const submit = async (e: Event) => {
    e.preventDefault();
    setGeneral(undefined);
    if (checked.problems.length > 0) {
      document.querySelector<HTMLElement>('.schemas [aria-invalid="true"]')?.focus();
      return;
    }
    setBusy(true);
    try {
      const body = {
        name: d.name.trim(),
        schema: checked.schema as AssetSchema['schema'],
        service_properties: (checked.sp ?? {}) as AssetSchema['service_properties'],
      };
      const res =
        d.id === undefined
          ? await api(session).POST('/api/v1/schemas', { body })
          : await api(session).PUT('/api/v1/schemas/{schema_id}', { params: { path: { schema_id: d.id } }, body });
      if (!res.data) {
        const e2 = apiErrors(res.error);
        setApiProblems(Object.entries(e2.byPath).map(([path, message]) => ({ path, message })));
        setGeneral(e2.general ?? errorText(res.error));
        return;
      }
      onSaved(res.data);
    } finally {
      setBusy(false);
    }
  };
  const title = d.id === undefined ? 'New schema' : readOnly ? `Schema ${d.id} (read only)` : `Edit schema ${d.id}`;
  return (
    <form class="panel" noValidate aria-labelledby="schema-editor-heading" onSubmit={handler(submit, (err) => setGeneral(errorText(err)))}>
      <h2 id="schema-editor-heading">{title}</h2>
      <div class="editor">
        <div>
          <FormField id="schema-name" label="Name" error={nameError}>
            <input
              {...describedBy('schema-name', nameError)}
              value={d.name}
              readOnly={readOnly}
              autoComplete="off"
              onInput={(e) => set('name', e.currentTarget.value)}
            />
          </FormField>
          <FormField id="schema-json" label="JSON Schema (draft 2020-12)" error={schemaError} help="Checked as you type.">
            <textarea
              {...describedBy('schema-json', schemaError, true)}
              rows={16}
              spellcheck={false}
              readOnly={readOnly}
              value={d.schema}
              onInput={(e) => set('schema', e.currentTarget.value)}
            />
          </FormField>
          <FormField
            id="schema-sp"
            label="Service properties"
            error={spError}
            help='{"<property>": {"searchable": true, "keyword": false, "ui": {"label": "…", "widget": "textarea"}}}'
          >
            <textarea
              {...describedBy('schema-sp', spError, true)}
              rows={6}
              spellcheck={false}
              readOnly={readOnly}
              value={d.sp}
              onInput={(e) => set('sp', e.currentTarget.value)}
            />
          </FormField>
          <p role="status" class={problems.length > 0 ? 'error-text block' : 'muted'} data-schema-check>
            {problems.length > 0 ? `${problems.length} problem${problems.length === 1 ? '' : 's'} to fix` : 'Valid: the API would accept it'}
          </p>
        </div>
        <div>
          {checked.schema !== undefined ? (
            <FormPreview schema={checked.schema} sp={checked.sp ?? {}} />
          ) : (
            <p class="muted">The preview appears once the schema is valid JSON.</p>
          )}
        </div>
      </div>
      <ErrorNotice text={general} />
      <div class="row">
        {!readOnly && (
          <button type="submit" disabled={busy}>
            {busy ? 'Saving…' : d.id === undefined ? 'Create schema' : 'Save schema'}
          </button>
        )}
        <button type="button" class="secondary" onClick={onClose}>
          Close
        </button>
      </div>
    </form>
  );
}

/** Schemas (CONTRACT §5): the paged list, create and edit (MANAGE_SCHEMAS) with checks as you type and the form's preview. */
export function SchemasPage({ session }: { session: Session }) {
  const { page, setPage, pages, list, error, reload } = usePagedList(
    (p) => api(session).GET('/api/v1/schemas', { params: { query: { page: p, page_size: PAGE_SIZE } } }),
    [session],
    PAGE_SIZE,
  );
  const [draft, setDraft] = useState<Draft>();
  const [status, setStatus] = useState<string>();
  // The editor checks against the meta-schema, a chunk of its own (lib/schema-meta.ts): loaded as the page opens.
  const [checkReady, setCheckReady] = useState(false);
  const [checkError, setCheckError] = useState<string>();
  const mayManage = can(session, 'MANAGE_SCHEMAS');
  useEffect(() => {
    let live = true;
    loadSchemaCheck().then(
      () => live && setCheckReady(true),
      (err: unknown) => live && setCheckError(`The schema check could not be loaded: ${errorText(err)}`),
    );
    return () => {
      live = false;
    };
  }, []);
  useEffect(() => {
    if (draft && checkReady) document.getElementById('schema-name')?.focus();
  }, [draft?.id, draft === undefined, checkReady]);
  const open = (s: AssetSchema) => {
    setStatus(undefined);
    setDraft({ id: s.schema_id, name: s.name, schema: pretty(s.schema), sp: pretty(s.service_properties) });
  };
  return (
    <div class="schemas">
      <h1>Schemas</h1>
      <p class="muted">A schema describes the custom data of assets (Update Data checks it) and gives the asset page its form.</p>
      <ErrorNotice text={error ?? checkError} />
      <p role="status" class="muted">
        {status}
      </p>
      {mayManage && !draft && (
        <p>
          <button type="button" onClick={() => setDraft({ name: '', schema: pretty(TEMPLATE), sp: pretty(TEMPLATE_SP) })}>
            New schema
          </button>
        </p>
      )}
      {draft && !checkReady && !checkError && <p class="muted">Loading the schema check…</p>}
      {draft && checkReady && (
        <Editor
          key={draft.id ?? 'new'}
          session={session}
          draft={draft}
          onClose={() => setDraft(undefined)}
          onSaved={(s) => {
            setStatus(`Schema ${s.schema_id} (${s.name}) saved`);
            setDraft(undefined);
            reload();
          }}
        />
      )}
      {list && (
        <DataTable
          caption={counted(list.total, 'schema')}
          columns={['Id', 'Name', 'Updated', 'Actions']}
          pager={{ page, pages, onPage: setPage, label: 'Schema pages' }}
        >
          {list.items.map((s) => (
            <tr key={s.schema_id} data-schema={s.schema_id}>
              <td data-label="Id">{s.schema_id}</td>
              <th scope="row" data-label="Name">
                {s.name}
              </th>
              <td data-label="Updated">{s.schema_id === 0 ? 'built in' : formatTime(s.updated_at)}</td>
              <td data-label="Actions">
                <button type="button" class="secondary" aria-label={`${s.schema_id === 0 || !mayManage ? 'View' : 'Edit'} ${s.name}`} onClick={() => open(s)}>
                  {s.schema_id === 0 || !mayManage ? 'View' : 'Edit'}
                </button>
              </td>
            </tr>
          ))}
        </DataTable>
      )}
    </div>
  );
}
