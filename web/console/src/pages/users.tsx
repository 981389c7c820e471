import { useEffect, useRef, useState } from 'preact/hooks';
import type { components } from '@dam/client';
import { ConfirmAction } from '../components/confirm-action';
import { describedBy, FormField } from '../components/form-field';
import { counted, DataTable, usePagedList } from '../components/data-table';
import { newUserBody, ROLES, USER_FIELDS, validateNewUser, validatePassword, type NewUser, type RoleId, type UserField } from '../lib/accounts';
import { formatTime } from '../lib/format';
import { formErrors, hasErrors, type FormErrors } from '../lib/form-errors';
import { handler } from '../lib/handler';
import { api, errorText, type Session } from '../session';
import { ErrorNotice } from '../components/status';

type User = components['schemas']['User'];
const PAGE_SIZE = 25;
const EMPTY: NewUser = { email: '', password: '', first_name: '', last_name: '', role_id: 3 };
/** Codes about one field of a form: their message goes next to it. */
const USER_CODES: Partial<Record<string, UserField>> = { EMAIL_TAKEN: 'email' };
const roleName = (id: number) => ROLES.find((r) => r.id === id)?.name ?? String(id);
type RowField = 'role_id' | 'disabled' | 'password';
const ROW_CODES: Partial<Record<string, RowField>> = { CANNOT_MODIFY_SELF: 'role_id' };

function CreateUser({ session, onCreated }: { session: Session; onCreated: (u: User) => void }) {
  const [form, setForm] = useState<NewUser>(EMPTY);
  const [errors, setErrors] = useState<FormErrors<UserField>>({ fields: {} });
  const [busy, setBusy] = useState(false);
  const set = <K extends keyof NewUser>(k: K, v: NewUser[K]) => setForm((f) => ({ ...f, [k]: v }));

  const submit = async (e: Event) => {
    e.preventDefault();
    const checked = validateNewUser(form);
    setErrors(checked);
    if (hasErrors(checked)) {
      document.getElementById(`user-${USER_FIELDS.find((f) => checked.fields[f]) ?? 'email'}`)?.focus();
      return;
    }
    setBusy(true);
    try {
      const { data, error } = await api(session).POST('/api/v1/users', { body: newUserBody({ ...form, role_id: form.role_id as RoleId }) });
      if (!data) {
        setErrors(formErrors(error, USER_FIELDS, USER_CODES));
        return;
      }
      setForm(EMPTY);
      onCreated(data);
    } finally {
      setBusy(false);
    }
  };
  const f = errors.fields;
  return (
    <form
      class="panel"
      noValidate
      aria-labelledby="create-user-heading"
      onSubmit={handler(submit, (err) => setErrors({ fields: {}, general: errorText(err) }))}
    >
      <h2 id="create-user-heading">Create a user</h2>
      <div class="row">
        <FormField id="user-email" label="Email" error={f.email}>
          <input
            {...describedBy('user-email', f.email)}
            type="email"
            autoComplete="off"
            value={form.email}
            onInput={(e) => set('email', e.currentTarget.value)}
          />
        </FormField>
        <FormField id="user-password" label="Password" error={f.password} help="At least 8 characters">
          <input
            {...describedBy('user-password', f.password, true)}
            type="password"
            autoComplete="new-password"
            value={form.password}
            onInput={(e) => set('password', e.currentTarget.value)}
          />
        </FormField>
        <FormField id="user-first_name" label="First name" error={f.first_name}>
          <input {...describedBy('user-first_name', f.first_name)} value={form.first_name} onInput={(e) => set('first_name', e.currentTarget.value)} />
        </FormField>
        <FormField id="user-last_name" label="Last name" error={f.last_name}>
          <input {...describedBy('user-last_name', f.last_name)} value={form.last_name} onInput={(e) => set('last_name', e.currentTarget.value)} />
        </FormField>
        <FormField id="user-role_id" label="Role" error={f.role_id}>
          <select {...describedBy('user-role_id', f.role_id)} value={String(form.role_id)} onChange={(e) => set('role_id', Number(e.currentTarget.value))}>
            {ROLES.map((r) => (
              <option key={r.id} value={String(r.id)}>
                {r.name}
              </option>
            ))}
          </select>
        </FormField>
        <div class="field">
          <button type="submit" disabled={busy}>
            {busy ? 'Creating…' : 'Create user'}
          </button>
        </div>
      </div>
      <ErrorNotice text={errors.general} />
    </form>
  );
}

/** A new password for a user, set by the administrator: their sessions and upload key end with it. */
function ResetPassword({ session, user, onDone }: { session: Session; user: User; onDone: (text?: string) => void }) {
  const [password, setPassword] = useState('');
  const [errors, setErrors] = useState<FormErrors<'password'>>({ fields: {} });
  const id = `reset-password-${user.user_id}`;
  const self = user.user_id === session.userId;
  useEffect(() => document.getElementById(id)?.focus(), [id]);
  const submit = async (e: Event) => {
    e.preventDefault();
    const checked = validatePassword(password);
    setErrors(checked);
    if (hasErrors(checked)) return;
    const { data, error } = await api(session).PATCH('/api/v1/users/{user_id}', { params: { path: { user_id: user.user_id } }, body: { password } });
    if (!data) return setErrors(formErrors(error, ['password'] as const));
    onDone(`New password set for ${user.email}`);
  };
  return (
    <form
      noValidate
      class="reset"
      aria-label={`Password reset for ${user.email}`}
      onSubmit={handler(submit, (err) => setErrors({ fields: {}, general: errorText(err) }))}
    >
      <FormField
        id={id}
        label={`New password for ${user.email}`}
        error={errors.fields.password}
        help={self ? 'You will be signed out and sign in again with it.' : 'Their sessions and upload key end; API keys stay.'}
      >
        <input
          {...describedBy(id, errors.fields.password, true)}
          type="password"
          autoComplete="new-password"
          value={password}
          onInput={(e) => setPassword(e.currentTarget.value)}
        />
      </FormField>
      {errors.general && (
        <p class="error-text" role="alert">
          {errors.general}
        </p>
      )}
      <button type="submit">Set password</button>{' '}
      <button type="button" class="secondary" onClick={() => onDone()}>
        Cancel
      </button>
    </form>
  );
}

/**
 * What deleting a user does (services/auth deleteUser): the account is removed with its sign-in (its sessions answer
 * 401 at once), and in the same transaction every API key it created is revoked; its upload key and accessID end with
 * it (uploads and cdn links signed with them are refused). Its assets are the group's and stay.
 */
const deleteQuestion = (who: string) =>
  `Delete ${who}? They can no longer sign in and their sessions end at once; the API keys they created are revoked, and their upload key and signed cdn links stop working. Their assets stay in the group. This cannot be undone.`;

function UserRow({
  session,
  user,
  onChanged,
  onDeleted,
  onMessage,
}: {
  session: Session;
  user: User;
  onChanged: (u: User) => void;
  onDeleted: (u: User) => void;
  onMessage: (text: string) => void;
}) {
  const [errors, setErrors] = useState<FormErrors<RowField>>({ fields: {} });
  const [resetting, setResetting] = useState(false);
  const [role, setRole] = useState<RoleId>(user.role_id);
  useEffect(() => setRole(user.role_id), [user.role_id]);
  const self = user.user_id === session.userId;
  const who = user.email;
  const resetButton = useRef<HTMLButtonElement>(null);

  const patch = async (body: { role_id?: RoleId; disabled?: boolean }, done: string): Promise<boolean> => {
    setErrors({ fields: {} });
    const { data, error } = await api(session).PATCH('/api/v1/users/{user_id}', { params: { path: { user_id: user.user_id } }, body });
    if (!data) {
      setErrors(formErrors(error, ['role_id', 'disabled'] as const, ROW_CODES));
      return false;
    }
    onChanged(data);
    onMessage(done);
    return true;
  };
  const onError = (err: unknown) => setErrors({ fields: {}, general: errorText(err) });
  /** DELETE /api/v1/users/{user_id}: a refusal (CANNOT_MODIFY_SELF, USER_NOT_FOUND, ...) in the API's words in the row. */
  const remove = async () => {
    setErrors({ fields: {} });
    const { data, error } = await api(session).DELETE('/api/v1/users/{user_id}', { params: { path: { user_id: user.user_id } } });
    if (!data) return onError(error);
    onDeleted(user);
  };
  const roleId = `role-${user.user_id}`;
  const rowError = errors.fields.disabled ?? errors.general;
  return (
    <tr data-user-id={user.user_id} data-disabled={String(user.disabled)}>
      <th scope="row" data-label="User">
        <div>{user.username || '—'}</div>
        <div class="muted">
          {who}
          {self && ' (you)'}
        </div>
      </th>
      <td data-label="Role">
        <div class="row-actions">
          <select
            id={roleId}
            aria-label={`Role of ${who}`}
            aria-invalid={errors.fields.role_id ? true : undefined}
            aria-describedby={errors.fields.role_id ? `${roleId}-error` : undefined}
            value={String(role)}
            onChange={(e) => setRole(Number(e.currentTarget.value) as RoleId)}
          >
            {ROLES.map((r) => (
              <option key={r.id} value={String(r.id)}>
                {r.name}
              </option>
            ))}
          </select>
          {/* Saved by a button, not on change: arrow keys on a closed select change it one step at a time. */}
          {role !== user.role_id && (
            <>
              <button
                type="button"
                aria-label={`Save role of ${who}`}
                onClick={handler(async () => {
                  // Refused: the control goes back to the role the user still has, next to the API's reason.
                  if (!(await patch({ role_id: role }, `${who} is now ${roleName(role)}`))) setRole(user.role_id);
                }, onError)}
              >
                Save role
              </button>
              <button type="button" class="secondary" onClick={() => setRole(user.role_id)}>
                Cancel
              </button>
            </>
          )}
        </div>
        {errors.fields.role_id && (
          <span id={`${roleId}-error`} class="error-text block" role="alert">
            {errors.fields.role_id}
          </span>
        )}
      </td>
      <td data-label="Status">{user.disabled ? <span class="status status-ERROR">Disabled</span> : <span class="status status-COMPLETED">Active</span>}</td>
      <td data-label="Created">{formatTime(user.created_at)}</td>
      <td data-label="Actions">
        <div class="row-actions">
          {user.disabled ? (
            <button
              type="button"
              class="secondary"
              aria-label={`Enable ${who}`}
              onClick={handler(async () => void (await patch({ disabled: false }, `${who} enabled: they can sign in again`)), onError)}
            >
              Enable
            </button>
          ) : (
            <ConfirmAction
              label="Disable"
              name={`Disable ${who}`}
              question={`Disable ${who}? Their sign-in, sessions, upload key and API keys stop working until enabled.`}
              confirm="Yes, disable"
              disabled={self}
              onConfirm={async () => void (await patch({ disabled: true }, `${who} disabled`))}
              onError={onError}
            />
          )}
          <ConfirmAction
            label="Delete"
            name={`Delete ${who}`}
            question={deleteQuestion(who)}
            confirm="Yes, delete"
            disabled={self}
            onConfirm={remove}
            onError={onError}
          />
          {!resetting && (
            <button ref={resetButton} type="button" class="secondary" aria-label={`Reset password of ${who}`} onClick={() => setResetting(true)}>
              Reset password
            </button>
          )}
        </div>
        {resetting && (
          <ResetPassword
            session={session}
            user={user}
            onDone={(text) => {
              setResetting(false);
              if (text) onMessage(text);
              setTimeout(() => resetButton.current?.focus(), 0);
            }}
          />
        )}
        {self && <p class="muted">You cannot disable or delete yourself.</p>}
        {rowError && (
          <p class="error-text" role="alert">
            {rowError}
          </p>
        )}
      </td>
    </tr>
  );
}

/**
 * Users (MANAGE_USERS, CONTRACT §2): the group's users a page at a time, create, role, disable and enable, new
 * password, delete.
 */
export function UsersPage({ session }: { session: Session }) {
  const [message, setMessage] = useState<string>();
  const { page, setPage, pages, list, setList, error, reload } = usePagedList(
    (p) => api(session).GET('/api/v1/users', { params: { query: { page: p, page_size: PAGE_SIZE } } }),
    [],
    PAGE_SIZE,
  );
  const replace = (u: User) => setList((l) => l && { ...l, items: l.items.map((x) => (x.user_id === u.user_id ? u : x)) });
  const deleted = (u: User) => {
    setMessage(`${u.email} deleted: their sessions, API keys and upload key no longer work`);
    // The last one on a page past the first: show the page before.
    if (page > 1 && list?.items.length === 1) setPage(page - 1);
    else reload();
  };
  return (
    <>
      <h1>Users</h1>
      <p class="notice ok" role="status" hidden={!message}>
        {message}
      </p>
      <CreateUser
        session={session}
        onCreated={(u) => {
          setMessage(`${u.email} created as ${u.role_name}`);
          reload();
        }}
      />
      <ErrorNotice text={error} />
      <div class="panel">
        <DataTable
          caption={list && `${counted(list.total, 'user')} in your group`}
          columns={['User', 'Role', 'Status', 'Created', 'Actions']}
          pager={{ page, pages, onPage: setPage, label: 'Pages of users' }}
        >
          {list?.items.map((u) => (
            <UserRow key={u.user_id} session={session} user={u} onChanged={replace} onDeleted={deleted} onMessage={setMessage} />
          ))}
        </DataTable>
      </div>
    </>
  );
}
