import { useState } from 'preact/hooks';
import type { components } from '@dam/client';
import { ConfirmButton } from '../components/confirm-button';
import { counted, DataTable, usePagedList } from '../components/data-table';
import { formatTime } from '../lib/format';
import { handler } from '../lib/handler';
import { BASKET, COLLECTION_MAX_ASSETS, fill } from '../lib/selection';
import { Link } from '../router';
import { api, can, errorText, type Session } from '../session';

type Collection = components['schemas']['Collection'];
const PAGE_SIZE = 25;

/** How full a collection is: "12 / 300" with a meter, and a word before the limit is hit. */
export function Fill({ count }: { count: number }) {
  const f = fill(count);
  return (
    <span class={f.near ? 'fill near' : 'fill'}>
      <meter min={0} max={COLLECTION_MAX_ASSETS} value={count} aria-label={`${f.text} assets`} /> {f.text}
      {f.full ? ' (full)' : f.near ? ' (nearly full)' : ''}
    </span>
  );
}

/** The field errors of a 400's `details` by path ("name"), and the message for the rest. */
function fieldErrors(error: unknown): { name?: string | undefined; other: string } {
  const details = (error as { error?: { details?: unknown } } | undefined)?.error?.details;
  const list = Array.isArray(details) ? (details as { path?: unknown; message?: unknown }[]) : [];
  const name = list.find((d) => d.path === 'name' || d.path === 'body.name');
  return { name: name ? String(name.message) : undefined, other: errorText(error) };
}

function RenameForm({ session, c, onDone, onCancel }: { session: Session; c: Collection; onDone: (c: Collection) => void; onCancel: () => void }) {
  const [name, setName] = useState(c.name);
  const [shared, setShared] = useState(c.shared);
  const [error, setError] = useState<{ name?: string | undefined; other: string }>();
  const save = async (e: Event) => {
    e.preventDefault();
    const { data, error: err } = await api(session).PATCH('/api/v1/collections/{collection_id}', {
      params: { path: { collection_id: c.collection_id } },
      body: { name: name.trim(), shared },
    });
    if (data) onDone(data);
    else setError(fieldErrors(err));
  };
  const id = `rename-${c.collection_id}`;
  return (
    <form class="row rename" aria-label={`Rename ${c.name}`} onSubmit={handler(save, (err) => setError({ other: errorText(err) }))}>
      <div class="field">
        <label for={id}>New name</label>
        <input
          id={id}
          required
          maxLength={200}
          value={name}
          onInput={(e) => setName(e.currentTarget.value)}
          aria-invalid={error?.name ? true : undefined}
          aria-describedby={error?.name ? `${id}-error` : undefined}
        />
        {error?.name && (
          <span class="error" id={`${id}-error`}>
            {error.name}
          </span>
        )}
      </div>
      <label class="inline-check">
        <input type="checkbox" checked={shared} onChange={(e) => setShared(e.currentTarget.checked)} /> Shared
      </label>
      <div class="field">
        <button type="submit">Save</button>
      </div>
      <div class="field">
        <button type="button" class="secondary" onClick={onCancel}>
          Cancel
        </button>
      </div>
      {error && !error.name && (
        <p class="error-text" role="alert">
          {error.other}
        </p>
      )}
    </form>
  );
}

/**
 * Collections (CONTRACT §9): the caller's and the group's shared ones, paged, SELECTED_ASSETS first (the selection
 * of the Assets page, which cannot be renamed, shared or deleted); create one private or shared, rename, share,
 * delete (its assets stay). Each shows how full it is against the limit of 300 assets.
 */
export function CollectionsPage({ session }: { session: Session }) {
  const [message, setMessage] = useState<{ text: string; error?: boolean }>();
  const [editing, setEditing] = useState<string>();
  const [name, setName] = useState('');
  const [shared, setShared] = useState(false);
  const [createError, setCreateError] = useState<{ name?: string | undefined; other: string }>();
  const manage = can(session, 'MANAGE_COLLECTIONS');
  const { page, setPage, pages, list, reload } = usePagedList(
    (p) => api(session).GET('/api/v1/collections', { params: { query: { page: p, page_size: PAGE_SIZE } } }),
    [],
    PAGE_SIZE,
    (text) => setMessage({ text, error: true }),
  );

  const create = async (e: Event) => {
    e.preventDefault();
    const { data, error } = await api(session).POST('/api/v1/collections', { body: { name: name.trim(), shared } });
    if (!data) {
      setCreateError(fieldErrors(error));
      return;
    }
    setCreateError(undefined);
    setName('');
    setMessage({ text: `${data.name} created (${data.shared ? 'shared with the group' : 'private'})` });
    reload();
  };

  const remove = async (c: Collection) => {
    const { data, error } = await api(session).DELETE('/api/v1/collections/{collection_id}', { params: { path: { collection_id: c.collection_id } } });
    setMessage(data ? { text: `${c.name} deleted; its assets stay` } : { text: errorText(error), error: true });
    reload();
  };

  const mayChange = (c: Collection) => manage && c.name !== BASKET && (c.owner_id === session.userId || can(session, 'EDIT_ASSET'));
  return (
    <>
      <h1>Collections</h1>
      {manage && (
        <form class="panel row" aria-label="New collection" onSubmit={handler(create, (err) => setCreateError({ other: errorText(err) }))}>
          <div class="field">
            <label for="collection-name">Name</label>
            <input
              id="collection-name"
              required
              maxLength={200}
              value={name}
              onInput={(e) => setName(e.currentTarget.value)}
              aria-invalid={createError?.name ? true : undefined}
              aria-describedby={createError?.name ? 'collection-name-error' : undefined}
            />
            {createError?.name && (
              <span class="error" id="collection-name-error">
                {createError.name}
              </span>
            )}
          </div>
          <label class="inline-check">
            <input type="checkbox" checked={shared} onChange={(e) => setShared(e.currentTarget.checked)} /> Shared with the group
          </label>
          <div class="field">
            <button type="submit" disabled={!name.trim()}>
              Create collection
            </button>
          </div>
          {createError && !createError.name && (
            <p class="error-text" role="alert">
              {createError.other}
            </p>
          )}
          <p class="help muted">
            Private collections are seen by you alone, shared ones by your whole group. A collection holds at most {COLLECTION_MAX_ASSETS} assets.
          </p>
        </form>
      )}
      {message && (
        <p class={message.error ? 'notice error' : 'notice ok'} role="status">
          {message.text}
        </p>
      )}
      <div class="panel table-scroll">
        <DataTable
          caption={list && counted(list.total, 'collection')}
          columns={['Name', 'Access', 'Assets', 'Owner', 'Created', { label: 'Actions', muted: true }]}
          pager={{ page, pages, onPage: setPage, label: 'Pages of collections' }}
        >
          {list?.items.map((c) => (
            <tr key={c.collection_id} data-collection-id={c.collection_id}>
              <th scope="row" data-label="Name">
                <Link href={`/collections/${encodeURIComponent(c.collection_id)}`}>{c.name}</Link>
                {c.name === BASKET && <div class="muted">Your selection on the Assets page</div>}
              </th>
              <td data-label="Access">{c.shared ? 'Shared' : 'Private'}</td>
              <td data-label="Assets">
                <Fill count={c.asset_count} />
              </td>
              <td data-label="Owner">{c.owner_id === session.userId ? 'you' : `user ${c.owner_id}`}</td>
              <td data-label="Created">{formatTime(c.created_at)}</td>
              <td data-label="Actions">
                {editing === c.collection_id ? (
                  <RenameForm
                    session={session}
                    c={c}
                    onCancel={() => setEditing(undefined)}
                    onDone={(u) => {
                      setEditing(undefined);
                      setMessage({ text: `Saved as ${u.name} (${u.shared ? 'shared' : 'private'})` });
                      reload();
                    }}
                  />
                ) : mayChange(c) ? (
                  <div class="row">
                    <button type="button" class="secondary" aria-label={`Rename ${c.name}`} onClick={() => setEditing(c.collection_id)}>
                      Rename
                    </button>
                    <ConfirmButton
                      label="Delete"
                      question={`Delete the collection ${c.name}? Its assets stay.`}
                      confirm="Yes, delete"
                      onConfirm={() => remove(c)}
                      onError={(err) => setMessage({ text: errorText(err), error: true })}
                    />
                  </div>
                ) : c.name === BASKET ? (
                  <span class="muted">Cannot be renamed, shared or deleted</span>
                ) : (
                  <span class="muted">—</span>
                )}
              </td>
            </tr>
          ))}
        </DataTable>
      </div>
    </>
  );
}
