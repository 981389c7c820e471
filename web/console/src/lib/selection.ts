/**
 * The pure rules of selecting assets and acting on them: ranges (shift-click, shift+arrows), moving in a grid with
 * the arrow keys, what the SELECTED_ASSETS collection must be told when the selection changes, the 300-asset limit
 * of every collection (CONTRACT §9), and the links of a selection as text to copy or a CSV file.
 */

/** At most this many assets in a collection (CONTRACT §9: more → 409 COLLECTION_FULL), SELECTED_ASSETS included. */
export const COLLECTION_MAX_ASSETS = 300;
/** The caller's own basket: a collection every user has, which the console keeps equal to the selection. */
export const BASKET = 'SELECTED_ASSETS';
/** Get Link's POST form takes at most this many ids per request. */
export const LINKS_PER_REQUEST = 100;

/** The ids from `from` to `to` inclusive, in the order shown (either direction); just `to` when `from` is not shown. */
export function rangeIds(order: readonly string[], from: string | undefined, to: string): string[] {
  const b = order.indexOf(to);
  if (b < 0) return [];
  const a = from === undefined ? -1 : order.indexOf(from);
  if (a < 0) return [to];
  const [lo, hi] = a <= b ? [a, b] : [b, a];
  return order.slice(lo, hi + 1);
}

/** The selection with `ids` checked or unchecked; the order of selecting is kept (new ones at the end). */
export function applyIds(selected: readonly string[], ids: readonly string[], checked: boolean): string[] {
  if (checked) {
    const have = new Set(selected);
    return [...selected, ...ids.filter((id, i) => !have.has(id) && ids.indexOf(id) === i)];
  }
  const drop = new Set(ids);
  return selected.filter((id) => !drop.has(id));
}

/**
 * What one click on a checkbox does: a plain click toggles that asset, a shift-click sets the whole range from the
 * anchor (the last asset clicked) to it to the state the clicked one takes.
 */
export function clickSelect(order: readonly string[], selected: readonly string[], anchor: string | undefined, id: string, shift: boolean): string[] {
  const checked = !selected.includes(id);
  return applyIds(selected, shift ? rangeIds(order, anchor, id) : [id], checked);
}

/** "Select all on this page": every shown id, or none of them when all already are. */
export function togglePage(order: readonly string[], selected: readonly string[]): string[] {
  const all = order.length > 0 && order.every((id) => selected.includes(id));
  return applyIds(selected, order, !all);
}

/** The state of the page's "select all" box: all, some (mixed) or none of the shown assets selected. */
export function pageState(order: readonly string[], selected: readonly string[]): 'all' | 'some' | 'none' {
  const n = order.filter((id) => selected.includes(id)).length;
  return n === 0 ? 'none' : n === order.length ? 'all' : 'some';
}

/**
 * Where an arrow key moves in a grid of `count` cards laid out `columns` to a row: left and right by one, up and
 * down by a row, Home and End to the ends; undefined when it would leave the grid (the focus stays).
 */
export function gridMove(index: number, key: string, columns: number, count: number): number | undefined {
  const cols = Math.max(1, columns);
  let next: number;
  switch (key) {
    case 'ArrowLeft':
      next = index - 1;
      break;
    case 'ArrowRight':
      next = index + 1;
      break;
    case 'ArrowUp':
      next = index - cols;
      break;
    case 'ArrowDown':
      next = index + cols;
      break;
    case 'Home':
      next = 0;
      break;
    case 'End':
      next = count - 1;
      break;
    default:
      return undefined;
  }
  return next >= 0 && next < count && next !== index ? next : undefined;
}

/** What SELECTED_ASSETS must be told to hold `desired` when it holds `stored`: ids to add and ids to remove. */
export function basketDiff(stored: readonly string[], desired: readonly string[]): { add: string[]; remove: string[] } {
  const s = new Set(stored);
  const d = new Set(desired);
  return { add: desired.filter((id) => !s.has(id)), remove: stored.filter((id) => !d.has(id)) };
}

/**
 * Why adding would pass a collection's limit, in the API's words (409 COLLECTION_FULL: "A collection holds at most
 * 300 assets (it has N, M more asked)"), or undefined when it fits. `present` counts its members now, `fresh` the
 * asked ids it does not hold yet.
 */
export function overLimit(present: number, fresh: number): string | undefined {
  if (present + fresh <= COLLECTION_MAX_ASSETS) return undefined;
  return `A collection holds at most ${COLLECTION_MAX_ASSETS} assets (it has ${present}, ${fresh} more asked)`;
}

/**
 * Why a selection of `next` assets cannot be kept (SELECTED_ASSETS is a collection: 300 at most), or undefined.
 * Shrinking is always allowed, so a selection over the limit (none should be) can still be cut down.
 */
export function selectionRefusal(current: number, next: number): string | undefined {
  if (next <= COLLECTION_MAX_ASSETS || next <= current) return undefined;
  return `At most ${COLLECTION_MAX_ASSETS} assets can be selected: the selection is kept in ${BASKET}, a collection, which holds at most ${COLLECTION_MAX_ASSETS} (${next} asked)`;
}

/** "12 / 300" and how full, for a meter; `near` from 90 % on, so the limit is explained before it is hit. */
export function fill(count: number): { text: string; ratio: number; near: boolean; full: boolean } {
  return {
    text: `${count} / ${COLLECTION_MAX_ASSETS}`,
    ratio: Math.min(1, count / COLLECTION_MAX_ASSETS),
    near: count >= COLLECTION_MAX_ASSETS * 0.9,
    full: count >= COLLECTION_MAX_ASSETS,
  };
}

/** `items` in runs of at most `size` (Get Link's POST form takes 100 ids). */
export function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

export type LinkEntry = { id: string; url: string; expires_at: string } | { id: string; error: { code: string; message: string } };

/** The links as text to copy: one URL a line, in the order asked; ids that carried an error are left out. */
export function linksText(entries: readonly LinkEntry[]): string {
  return entries.flatMap((e) => ('url' in e ? [e.url] : [])).join('\n');
}

const csvCell = (v: string): string => (/[",\n\r]/.test(v) ? `"${v.replace(/"/g, '""')}"` : v);

/** The links as a CSV file (id, name, url, expires_at, error), one row per asset asked. */
export function linksCsv(entries: readonly LinkEntry[], names: ReadonlyMap<string, string>): string {
  const rows = [['id', 'name', 'url', 'expires_at', 'error']];
  for (const e of entries) {
    const name = names.get(e.id) ?? '';
    rows.push('url' in e ? [e.id, name, e.url, e.expires_at, ''] : [e.id, name, '', '', `${e.error.message} (${e.error.code})`]);
  }
  return `${rows.map((r) => r.map(csvCell).join(',')).join('\r\n')}\r\n`;
}

/**
 * Runs `task` for every item, `concurrency` at a time, reporting each ending; one failing never stops the others.
 * The result per item is its value or the error it threw.
 */
export async function runEach<T, R>(
  items: readonly T[],
  task: (item: T) => Promise<R>,
  onDone: (done: number) => void,
  concurrency = 4,
): Promise<({ ok: true; value: R } | { ok: false; error: unknown })[]> {
  const out: ({ ok: true; value: R } | { ok: false; error: unknown })[] = new Array(items.length);
  let next = 0;
  let done = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      try {
        out[i] = { ok: true, value: await task(items[i] as T) };
      } catch (error) {
        out[i] = { ok: false, error };
      }
      onDone(++done);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
  return out;
}
