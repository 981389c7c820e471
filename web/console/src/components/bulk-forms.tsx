import { useEffect, useState } from 'preact/hooks';
import type { components } from '@dam/client';
import type { Selection } from '../lib/basket';
import { processKeys } from '../lib/conversions';
import { handler } from '../lib/handler';
import { BASKET, chunks, fill, linksCsv, linksText, LINKS_PER_REQUEST, overLimit, type LinkEntry } from '../lib/selection';
import { api, errorText, type Session } from '../session';
import { SelectField } from './form-field';
import { ApiFailure, type Runner } from './selection-bar';

type Collection = components['schemas']['Collection'];
const NEW = '__new__';

/** The ids of a collection (at most 300: three pages of 100). */
export async function collectionMembers(session: Session, id: string): Promise<string[]> {
  const out: string[] = [];
  for (let page = 1; page <= 3; page += 1) {
    const { data, error } = await api(session).GET('/api/v1/collections/{collection_id}', {
      params: { path: { collection_id: id }, query: { page, page_size: 100 } },
    });
    if (!data) throw new ApiFailure(error);
    out.push(...data.items.map((a) => a.id));
    if (page * 100 >= data.total) break;
  }
  return out;
}

/**
 * Add the selection to a collection, chosen (with how full it is) or made here (private or shared). Past the
 * 300-asset limit the console refuses before asking, with the API's reason; the API's own 409 is shown as it comes.
 */
export function AddToCollectionForm({ session, ids, runner }: { session: Session; ids: string[]; runner: Runner }) {
  const [list, setList] = useState<Collection[]>();
  const [choice, setChoice] = useState(NEW);
  const [name, setName] = useState('');
  const [shared, setShared] = useState(false);

  useEffect(() => {
    api(session)
      .GET('/api/v1/collections', { params: { query: { page: 1, page_size: 100 } } })
      .then(({ data, error }) => {
        if (!data) throw new ApiFailure(error);
        const mine = data.items.filter((c) => c.name !== BASKET);
        setList(mine);
        if (mine[0]) setChoice(mine[0].collection_id);
      })
      .catch(runner.fail);
  }, []);

  const add = async (e: Event) => {
    e.preventDefault();
    const client = api(session);
    let target = list?.find((c) => c.collection_id === choice);
    if (target && target.asset_count + ids.length > 300) {
      const members = new Set(await collectionMembers(session, target.collection_id));
      const reason = overLimit(target.asset_count, ids.filter((id) => !members.has(id)).length);
      if (reason) {
        runner.report({ text: `${reason}. Remove assets from ${target.name} or choose another collection.`, error: true, failures: [] });
        return;
      }
    }
    runner.progress({ label: `Adding ${ids.length} to a collection`, done: 0, total: 1 });
    try {
      if (!target) {
        const made = await client.POST('/api/v1/collections', { body: { name: name.trim(), shared } });
        if (!made.data) throw new ApiFailure(made.error);
        target = made.data;
        setList((l) => [...(l ?? []), made.data]);
        setChoice(made.data.collection_id);
        setName('');
      }
      const { data, error } = await client.POST('/api/v1/collections/{collection_id}/assets', {
        params: { path: { collection_id: target.collection_id } },
        body: { ids },
      });
      if (!data) throw new ApiFailure(error);
      setList((l) => l?.map((c) => (c.collection_id === data.collection_id ? data : c)));
      runner.report({ text: `${ids.length} added to ${data.name}, which now holds ${fill(data.asset_count).text}.`, failures: [] });
    } finally {
      runner.progress(undefined);
    }
  };

  return (
    <form class="bulk-form row" aria-label="Add to a collection" onSubmit={handler(add, runner.fail)}>
      <div class="field">
        <label for="bulk-collection">Collection</label>
        <select id="bulk-collection" value={choice} onChange={(e) => setChoice(e.currentTarget.value)}>
          {list?.map((c) => (
            <option key={c.collection_id} value={c.collection_id}>
              {c.name} ({fill(c.asset_count).text}
              {c.shared ? ', shared' : ''})
            </option>
          ))}
          <option value={NEW}>New collection…</option>
        </select>
      </div>
      {choice === NEW && (
        <>
          <div class="field">
            <label for="bulk-collection-name">Name</label>
            <input id="bulk-collection-name" required maxLength={200} value={name} onInput={(e) => setName(e.currentTarget.value)} />
          </div>
          <label class="inline-check">
            <input type="checkbox" checked={shared} onChange={(e) => setShared(e.currentTarget.checked)} /> Shared with the group
          </label>
        </>
      )}
      <div class="field">
        <button type="submit" disabled={runner.busy || (choice === NEW && !name.trim())}>
          Add {ids.length}
        </button>
      </div>
      <p class="help muted">A collection holds at most 300 assets; adding past that is refused and nothing is added.</p>
    </form>
  );
}

const contentTypeOf = (selection: Selection, id: string) => selection.known.get(id)?.content_type;

/** Process: the keys that apply to some selected asset; each asset gets the chosen keys that apply to it. */
export function ProcessForm({ session, selection, runner }: { session: Session; selection: Selection; runner: Runner }) {
  const [custom, setCustom] = useState<string[]>([]);
  const [chosen, setChosen] = useState<string[]>([]);
  useEffect(() => {
    api(session)
      .GET('/api/v1/settings')
      .then(({ data }) => setCustom(Object.keys(data?.conversions.custom ?? {})))
      .catch(() => setCustom([]));
  }, []);
  const types = new Set(selection.ids.map((id) => contentTypeOf(selection, id) ?? ''));
  const offered = [...new Set([...types].flatMap((t) => processKeys(t, custom)))];

  const run = async (e: Event) => {
    e.preventDefault();
    const { done, failures } = await runner.each(`Processing ${selection.ids.length}`, selection.ids, async (id) => {
      const type = contentTypeOf(selection, id);
      const keys = type === undefined ? chosen : chosen.filter((k) => processKeys(type, custom).includes(k));
      if (keys.length === 0) throw new Error(`none of ${chosen.join(', ')} applies to ${type ?? 'this asset'}`);
      const { data, error } = await api(session).POST('/api/v1/assets/{asset_id}/process', { params: { path: { asset_id: id } }, body: { keys } });
      if (!data) throw new ApiFailure(error);
      return data.job_id;
    });
    runner.report({ text: `${done.length} of ${selection.ids.length} queued.`, jobIds: done.map((d) => d.value), failures });
  };

  if (offered.length === 0) return <p class="muted">None of the selected assets has outputs to make (images and videos do).</p>;
  return (
    <form class="bulk-form" aria-label="Process the selection" onSubmit={handler(run, runner.fail)}>
      <fieldset class="plain">
        <legend>Make these outputs (again)</legend>
        <div class="checks">
          {offered.map((k) => (
            <label key={k}>
              <input type="checkbox" checked={chosen.includes(k)} onChange={() => setChosen((c) => (c.includes(k) ? c.filter((x) => x !== k) : [...c, k]))} />
              {k}
            </label>
          ))}
        </div>
      </fieldset>
      <button type="submit" disabled={runner.busy || chosen.length === 0}>
        Process {selection.ids.length}
      </button>
    </form>
  );
}

const ADDONS = ['auto_tagging', 'text_extraction', 'face_recognition', 'background_removal', 'storyboard'] as const;
type Addon = (typeof ADDONS)[number];

/** Run one addon on every selected asset (image addons apply to images, storyboard to videos: the API says which not). */
export function AddonForm({ session, selection, runner }: { session: Session; selection: Selection; runner: Runner }) {
  const [addon, setAddon] = useState<Addon>('auto_tagging');
  const run = async (e: Event) => {
    e.preventDefault();
    const { done, failures } = await runner.each(`Running ${addon} on ${selection.ids.length}`, selection.ids, async (id) => {
      const { data, error } = await api(session).POST('/api/v1/assets/{asset_id}/addons/{addon}', { params: { path: { asset_id: id, addon } }, body: {} });
      if (!data) throw new ApiFailure(error);
      return data.job_id;
    });
    runner.report({ text: `${addon}: ${done.length} of ${selection.ids.length} queued.`, jobIds: done.map((d) => d.value), failures });
  };
  return (
    <form class="bulk-form row" aria-label="Run an addon on the selection" onSubmit={handler(run, runner.fail)}>
      <SelectField id="bulk-addon" label="Addon" value={addon} options={ADDONS} onChange={setAddon} />
      <div class="field">
        <button type="submit" disabled={runner.busy}>
          Run on {selection.ids.length}
        </button>
      </div>
    </form>
  );
}

/** Signed links for the selection through Get Link's POST form (100 ids a request): a list to copy, or a CSV file. */
export function LinksForm({ session, selection, runner }: { session: Session; selection: Selection; runner: Runner }) {
  const [key, setKey] = useState('original');
  const [delivery, setDelivery] = useState<'download' | 'display'>('download');
  const [expiry, setExpiry] = useState('3600');
  const [entries, setEntries] = useState<LinkEntry[]>();
  const [file, setFile] = useState<string>();
  const [copied, setCopied] = useState(false);

  useEffect(() => () => file && URL.revokeObjectURL(file), [file]);

  const get = async (e: Event) => {
    e.preventDefault();
    const ids = selection.ids;
    const batches = chunks(ids, LINKS_PER_REQUEST);
    const got: LinkEntry[] = [];
    setEntries(undefined);
    setCopied(false);
    runner.progress({ label: 'Getting links', done: 0, total: ids.length });
    try {
      for (const batch of batches) {
        const { data, error } = await api(session).POST('/api/v1/assets/get_link', { body: { ids: batch, key, link_type: 'cdn', delivery, expiry } });
        if (!data) throw new ApiFailure(error);
        got.push(...(data.links as LinkEntry[]));
        runner.progress({ label: 'Getting links', done: got.length, total: ids.length });
      }
    } finally {
      runner.progress(undefined);
    }
    const names = new Map(ids.map((id) => [id, runner.nameOf(id)]));
    setEntries(got);
    setFile(URL.createObjectURL(new Blob([linksCsv(got, names)], { type: 'text/csv' })));
    const failures = got.flatMap((l) => ('error' in l ? [{ id: l.id, name: runner.nameOf(l.id), reason: `${l.error.message} (${l.error.code})` }] : []));
    runner.report({ text: `${got.length - failures.length} of ${ids.length} links made.`, failures });
  };

  const text = entries ? linksText(entries) : '';
  return (
    <form class="bulk-form" aria-label="Get links for the selection" onSubmit={handler(get, runner.fail)}>
      <div class="row">
        <div class="field">
          <label for="bulk-link-key">Key</label>
          <input id="bulk-link-key" required maxLength={64} value={key} onInput={(e) => setKey(e.currentTarget.value)} />
        </div>
        <div class="field">
          <label for="bulk-link-delivery">Delivery</label>
          <select id="bulk-link-delivery" value={delivery} onChange={(e) => setDelivery(e.currentTarget.value === 'display' ? 'display' : 'download')}>
            <option value="download">download</option>
            <option value="display">display</option>
          </select>
        </div>
        <div class="field">
          <label for="bulk-link-expiry">Expiry (seconds)</label>
          <input id="bulk-link-expiry" required inputMode="numeric" value={expiry} onInput={(e) => setExpiry(e.currentTarget.value)} />
        </div>
        <div class="field">
          <button type="submit" disabled={runner.busy}>
            Get {selection.ids.length} link{selection.ids.length === 1 ? '' : 's'}
          </button>
        </div>
      </div>
      {entries && (
        <div class="field">
          <label for="bulk-links">Links, one a line</label>
          <textarea id="bulk-links" readOnly rows={Math.min(10, Math.max(2, entries.length))} class="link-output" value={text} />
          <div class="row">
            <button
              type="button"
              class="secondary"
              onClick={handler(
                async () => {
                  await navigator.clipboard.writeText(text);
                  setCopied(true);
                },
                (err) => runner.report({ text: `The links could not be copied: ${errorText(err)}`, error: true, failures: [] }),
              )}
            >
              Copy the links
            </button>
            {file && (
              <a href={file} download="links.csv">
                Download as a CSV file
              </a>
            )}
            {copied && <span role="status">Copied</span>}
          </div>
        </div>
      )}
    </form>
  );
}
