import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import type { components } from '@dam/client';
import { ConfirmAction } from '../components/confirm-action';
import { CopyButton } from '../components/copy-button';
import { describedBy, FormField } from '../components/form-field';
import { counted, DataTable, usePagedList } from '../components/data-table';
import { KEY_FIELDS, keyRolesFor, validateNewKey, type KeyField, type KeyRole } from '../lib/accounts';
import { formatTime } from '../lib/format';
import { formErrors, hasErrors, type FormErrors } from '../lib/form-errors';
import { handler } from '../lib/handler';
import { api, can, errorText, setSession, type Session } from '../session';
import { ErrorNotice } from '../components/status';

type ApiKey = components['schemas']['ApiKey'];
const PAGE_SIZE = 25;
const KEY_CODES: Partial<Record<string, KeyField>> = { ROLE_ABOVE_YOUR_OWN: 'role' };

/** A credential shown this once, in a read-only field with a copy button; it lives in this component's state only. */
function Secret({
  id,
  label,
  value,
  note,
  copyLabel,
  children,
}: {
  id: string;
  label: string;
  value: string;
  note: string;
  copyLabel: string;
  children?: ComponentChildren;
}) {
  const input = useRef<HTMLInputElement>(null);
  return (
    <div class="secret" data-secret={id}>
      <FormField id={id} label={label} help={note}>
        <input ref={input} {...describedBy(id, undefined, true)} class="link-output" readOnly value={value} onFocus={(e) => e.currentTarget.select()} />
      </FormField>
      <div class="row">
        <CopyButton text={value} label={copyLabel} fallback={() => input.current} />
        {children}
      </div>
    </div>
  );
}

function CreateKey({ session, onCreated }: { session: Session; onCreated: () => void }) {
  const roles = keyRolesFor(session.roleName);
  const [name, setName] = useState('');
  const [role, setRole] = useState<KeyRole>(roles.includes('USER') ? 'USER' : (roles[0] ?? 'CREATOR'));
  const [errors, setErrors] = useState<FormErrors<KeyField>>({ fields: {} });
  const [busy, setBusy] = useState(false);
  const [minted, setMinted] = useState<{ name: string; role: string; key: string }>();
  const shown = useRef<HTMLHeadingElement>(null);
  useEffect(() => minted && shown.current?.focus(), [minted]);

  const submit = async (e: Event) => {
    e.preventDefault();
    const checked = validateNewKey({ name, role });
    setErrors(checked);
    if (hasErrors(checked)) {
      document.getElementById(`key-${KEY_FIELDS.find((f) => checked.fields[f]) ?? 'name'}`)?.focus();
      return;
    }
    setBusy(true);
    try {
      const { data, error } = await api(session).POST('/api/v1/api_keys', { body: { name: name.trim(), role } });
      if (!data) return setErrors(formErrors(error, KEY_FIELDS, KEY_CODES));
      setMinted({ name: data.name, role: data.role, key: data.key });
      setName('');
      onCreated();
    } finally {
      setBusy(false);
    }
  };
  const f = errors.fields;
  return (
    <form class="panel" noValidate aria-labelledby="create-key-heading" onSubmit={handler(submit, (err) => setErrors({ fields: {}, general: errorText(err) }))}>
      <h2 id="create-key-heading">Create an API key</h2>
      <p class="muted">
        A key acts as you, limited to its role (never above yours), sent as the header <code>X-Service-Api-Key</code>. It is shown once: only its hash is kept.
      </p>
      <div class="row">
        <FormField id="key-name" label="Name" error={f.name} help="What uses it, e.g. ci-pipeline">
          <input {...describedBy('key-name', f.name, true)} value={name} onInput={(e) => setName(e.currentTarget.value)} />
        </FormField>
        <FormField id="key-role" label="Role" error={f.role}>
          <select {...describedBy('key-role', f.role)} value={role} onChange={(e) => setRole(e.currentTarget.value as KeyRole)}>
            {roles.map((r) => (
              <option key={r} value={r}>
                {r}
              </option>
            ))}
          </select>
        </FormField>
        <div class="field">
          <button type="submit" disabled={busy}>
            {busy ? 'Creating…' : 'Create key'}
          </button>
        </div>
      </div>
      <ErrorNotice text={errors.general} />
      {minted && (
        <section class="notice ok" aria-labelledby="minted-heading">
          <h3 id="minted-heading" ref={shown} tabIndex={-1}>
            Key {minted.name} ({minted.role}) created
          </h3>
          <Secret
            id="minted-key"
            label="API key"
            value={minted.key}
            copyLabel="Copy the API key"
            note="Copy it now: it is never shown again, not even after a reload."
          >
            <button type="button" class="secondary" onClick={() => setMinted(undefined)}>
              Done, hide the key
            </button>
          </Secret>
        </section>
      )}
    </form>
  );
}

function GroupKeys({ session }: { session: Session }) {
  const [message, setMessage] = useState<string>();
  const { page, setPage, pages, list, error, setError, reload } = usePagedList(
    (p) => api(session).GET('/api/v1/api_keys', { params: { query: { page: p, page_size: PAGE_SIZE } } }),
    [],
    PAGE_SIZE,
  );

  const revoke = async (k: ApiKey) => {
    const { data, error: err } = await api(session).DELETE('/api/v1/api_keys/{key_id}', { params: { path: { key_id: k.key_id } } });
    if (!data) return setError(errorText(err));
    setError(undefined);
    setMessage(`Key ${k.name} revoked: it answers 401 from now on`);
    reload();
  };

  return (
    <>
      <CreateKey
        session={session}
        onCreated={() => {
          setMessage(undefined);
          reload();
        }}
      />
      <section class="panel" aria-labelledby="keys-heading">
        <h2 id="keys-heading">Your group's API keys</h2>
        <p class="notice ok" role="status" hidden={!message}>
          {message}
        </p>
        <ErrorNotice text={error} />
        <DataTable
          caption={list && `${counted(list.total, 'active key')} (the keys themselves are never shown again)`}
          columns={['Name', 'Role', 'Acts as', 'Created', 'Action']}
          pager={{ page, pages, onPage: setPage, label: 'Pages of API keys' }}
        >
          {list?.items.map((k) => (
            <tr key={k.key_id} data-key-id={k.key_id}>
              <th scope="row" data-label="Name">
                {k.name}
              </th>
              <td data-label="Role">{k.role}</td>
              <td data-label="Acts as">{k.created_by === session.userId ? 'you' : `user ${k.created_by}`}</td>
              <td data-label="Created">{formatTime(k.created_at)}</td>
              <td data-label="Action">
                <ConfirmAction
                  label="Revoke"
                  name={`Revoke ${k.name}`}
                  question={`Revoke ${k.name}? Every request with it answers 401 at once; this cannot be undone.`}
                  confirm="Yes, revoke"
                  onConfirm={() => revoke(k)}
                  onError={(err) => setError(errorText(err))}
                />
              </td>
            </tr>
          ))}
        </DataTable>
      </section>
    </>
  );
}

/** The signed-in user's own credentials: the upload key (picker.js) and the accessID (signed cdn links). */
function OwnKeys({ session }: { session: Session }) {
  const [upload, setUpload] = useState<{ text: string; error?: boolean }>();
  const [access, setAccess] = useState<{ text: string; error?: boolean }>();

  const rotateUploadKey = async () => {
    const { data, error } = await api(session).POST('/api/v1/users/me/uploadkey');
    if (!data) return setUpload({ text: errorText(error), error: true });
    // The console's own uploads go on with the new key.
    setSession({ ...session, uploadkey: data.uploadkey });
    setUpload({ text: 'Upload key rotated: uploads with the old key now answer 401.' });
  };
  const rotateAccessId = async () => {
    const { data, error } = await api(session).POST('/api/v1/users/me/access_id');
    if (!data) return setAccess({ text: errorText(error), error: true });
    setAccess({ text: `accessID rotated (now ${data.accessID}): every cdn link you signed before answers 403; links you get from now on work.` });
  };

  return (
    <>
      <section class="panel" aria-labelledby="uploadkey-heading" data-section="uploadkey">
        <h2 id="uploadkey-heading">Your upload key</h2>
        <p>
          The upload key lets the file picker (<code>picker.js</code>, on this console or embedded in another site) upload as you, and nothing else.
        </p>
        <Secret
          id="uploadkey"
          label="Upload key"
          value={session.uploadkey}
          copyLabel="Copy the upload key"
          note="Give it only to pages that should upload as you."
        />
        <p class="warning" id="uploadkey-warning">
          <strong>Rotating it stops the old key at once:</strong> every upload with it fails (401), including every page or script that embeds{' '}
          <code>picker.js</code> with it, until it is given the new key. This console switches to the new key.
        </p>
        <div class="row">
          <ConfirmAction
            label="Rotate upload key"
            question="Rotate your upload key? Uploads with the old key fail from now on."
            confirm="Yes, rotate upload key"
            onConfirm={rotateUploadKey}
            onError={(err) => setUpload({ text: errorText(err), error: true })}
          />
        </div>
        {upload && (
          <p class={upload.error ? 'notice error' : 'notice ok'} role={upload.error ? 'alert' : 'status'}>
            {upload.text}
          </p>
        )}
      </section>
      <section class="panel" aria-labelledby="accessid-heading" data-section="accessid">
        <h2 id="accessid-heading">Your accessID</h2>
        <p>Every cdn link you sign carries your accessID, and its signature is made with a secret tied to it.</p>
        <p class="warning" id="accessid-warning">
          <strong>Rotating it revokes every cdn link you ever signed:</strong> each one answers 403 at once, wherever it was shared, embedded or cached. Links
          you get afterwards work. Use it when a link leaked.
        </p>
        <div class="row">
          <ConfirmAction
            label="Rotate accessID"
            question="Rotate your accessID? Every cdn link you signed stops working."
            confirm="Yes, rotate accessID"
            onConfirm={rotateAccessId}
            onError={(err) => setAccess({ text: errorText(err), error: true })}
          />
        </div>
        {access && (
          <p class={access.error ? 'notice error' : 'notice ok'} role={access.error ? 'alert' : 'status'}>
            {access.text}
          </p>
        )}
      </section>
    </>
  );
}

/** API keys (CONTRACT §2, §7, §12): the group's keys with MANAGE_USERS; for everyone, their own upload key and accessID. */
export function ApiKeysPage({ session }: { session: Session }) {
  return (
    <>
      <h1>API keys</h1>
      {can(session, 'MANAGE_USERS') ? (
        <GroupKeys session={session} />
      ) : (
        <p class="muted">The group's API keys are managed by users with the MANAGE_USERS permission (administrators).</p>
      )}
      <OwnKeys session={session} />
    </>
  );
}
