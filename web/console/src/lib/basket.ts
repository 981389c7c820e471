import { useEffect, useState } from 'preact/hooks';
import { api, can, errorText, type Session } from '../session';
import { applyIds, BASKET, basketDiff, COLLECTION_MAX_ASSETS, selectionRefusal } from './selection';

/**
 * The selection on the Assets page, kept in step with the caller's `SELECTED_ASSETS` collection (its basket,
 * CONTRACT §9): read from it when the console starts, and every change written to it (adds and removes, one
 * request at a time, in order), so a reload, another tab or an integration reading the basket sees what is
 * selected. Like every collection it holds at most 300 assets: a change past that is refused here, with the reason.
 * A role without MANAGE_COLLECTIONS keeps the selection in this tab only.
 */
export interface SelectedAsset {
  id: string;
  name: string;
  content_type: string;
  status: string;
  creator_id?: number | undefined;
}

export interface SelectionState {
  ids: string[];
  /** What the console knows of each selected asset (from the grid or the basket). */
  known: ReadonlyMap<string, SelectedAsset>;
  loaded: boolean;
  saving: boolean;
  /** Kept in SELECTED_ASSETS (false: in this tab only). */
  synced: boolean;
  /** The last refusal (the limit) or failed write, in the contract's words. */
  error?: string | undefined;
}

let owner: string | undefined;
let state: SelectionState = { ids: [], known: new Map(), loaded: false, saving: false, synced: false };
/** What SELECTED_ASSETS holds as far as the console knows. */
let stored: string[] = [];
let writing = false;
const listeners = new Set<(s: SelectionState) => void>();

function set(next: Partial<SelectionState>): void {
  state = { ...state, ...next };
  for (const l of listeners) l(state);
}

const ownerOf = (s: Session) => `${s.userId}\n${s.jwt}`;

/** Reads SELECTED_ASSETS (at most 300: three pages of 100). */
async function load(session: Session): Promise<void> {
  const me = ownerOf(session);
  const ids: string[] = [];
  const known = new Map(state.known);
  try {
    for (let page = 1; page <= Math.ceil(COLLECTION_MAX_ASSETS / 100); page += 1) {
      const { data, error } = await api(session).GET('/api/v1/collections/{collection_id}', {
        params: { path: { collection_id: BASKET }, query: { page, page_size: 100 } },
      });
      if (!data) throw error;
      for (const a of data.items) {
        ids.push(a.id);
        known.set(a.id, { ...known.get(a.id), id: a.id, name: a.name, content_type: a.content_type, status: a.status });
      }
      if (page * 100 >= data.total) break;
    }
    if (owner !== me) return;
    stored = ids;
    // Assets checked while it was read are kept (and written after).
    const keep = state.loaded ? [] : state.ids;
    set({ ids: applyIds(ids, keep, true), known, loaded: true, error: undefined });
    if (keep.length > 0) void flush(session);
  } catch (err) {
    if (owner === me) set({ loaded: true, error: errorText(err, 'SELECTED_ASSETS could not be read') });
  }
}

/** Writes the difference between the selection and SELECTED_ASSETS until they agree; a refusal reloads the basket. */
async function flush(session: Session): Promise<void> {
  if (writing || !state.synced || !state.loaded) return;
  writing = true;
  const me = ownerOf(session);
  try {
    for (;;) {
      if (owner !== me) return;
      const { add, remove } = basketDiff(stored, state.ids);
      if (add.length === 0 && remove.length === 0) break;
      set({ saving: true });
      const path = { collection_id: BASKET };
      const res =
        remove.length > 0
          ? await api(session).DELETE('/api/v1/collections/{collection_id}/assets', { params: { path }, body: { ids: remove } })
          : await api(session).POST('/api/v1/collections/{collection_id}/assets', { params: { path }, body: { ids: add } });
      if (owner !== me) return;
      if (res.error || !res.data) {
        set({ error: errorText(res.error, 'SELECTED_ASSETS could not be changed') });
        const keep = state.error;
        await load(session);
        set({ error: keep });
        break;
      }
      const removeSet = new Set(remove);
      stored = remove.length > 0 ? stored.filter((id) => !removeSet.has(id)) : [...stored, ...add];
    }
  } catch (err) {
    if (owner === me) set({ error: errorText(err, 'SELECTED_ASSETS could not be changed') });
  } finally {
    writing = false;
    if (owner === me) set({ saving: false });
  }
}

/** Starts (or restarts, for another sign-in) the selection of this session. */
function attach(session: Session): void {
  const me = ownerOf(session);
  if (owner === me) return;
  owner = me;
  stored = [];
  const synced = can(session, 'MANAGE_COLLECTIONS');
  state = { ids: [], known: new Map(), loaded: !synced, saving: false, synced };
  if (synced) void load(session);
}

export interface Selection extends SelectionState {
  /** Checks or unchecks these ids (the grid's assets passed in `seen` become known); refused past 300. */
  change(next: string[], seen?: readonly SelectedAsset[]): boolean;
  check(ids: readonly string[], checked: boolean, seen?: readonly SelectedAsset[]): boolean;
  clear(): void;
  dismissError(): void;
}

export function useSelection(session: Session): Selection {
  attach(session);
  const [s, setS] = useState(state);
  useEffect(() => {
    listeners.add(setS);
    setS(state);
    return () => {
      listeners.delete(setS);
    };
  }, []);
  const change = (next: string[], seen: readonly SelectedAsset[] = []): boolean => {
    attach(session);
    const refused = selectionRefusal(state.ids.length, next.length);
    if (refused) {
      set({ error: refused });
      return false;
    }
    const known = new Map(state.known);
    for (const a of seen) known.set(a.id, a);
    set({ ids: next, known, error: undefined });
    void flush(session);
    return true;
  };
  return {
    ...s,
    change,
    check: (ids, checked, seen) => change(applyIds(state.ids, ids, checked), seen),
    clear: () => change([]),
    dismissError: () => set({ error: undefined }),
  };
}

/** Reads SELECTED_ASSETS again (after it was changed elsewhere, e.g. from its collection page). */
export function refreshSelection(session: Session): void {
  if (owner === ownerOf(session) && state.synced && state.loaded) void load(session);
}
