import { useRef } from 'preact/hooks';
import './selection.css';
import { kindLabel } from '../lib/asset';
import { formatBytes } from '../lib/format';
import { clickSelect, gridMove, pageState, rangeIds, togglePage } from '../lib/selection';
import { Link } from '../router';
import { StatusBadge } from './status';
import { Thumb } from './thumb';

export interface GridAsset {
  id: string;
  name: string;
  size: number;
  content_type: string;
  status: string;
  thumbhash?: unknown;
}

export interface AssetGridProps {
  items: GridAsset[];
  /** Display links of thumbnails by asset id. */
  links: ReadonlyMap<string, string>;
  label: string;
  selected: readonly string[];
  /** The selection as it should become (the grid computes ranges); false when it was refused. */
  onSelect: (next: string[]) => void;
}

/** How many cards a row of the grid holds as laid out now (cards of one row share their top). */
function columnsOf(list: HTMLElement | null): number {
  const cards = list ? [...list.children] : [];
  const top = (cards[0] as HTMLElement | undefined)?.offsetTop;
  const n = cards.filter((c) => (c as HTMLElement).offsetTop === top).length;
  return Math.max(1, n);
}

/**
 * The grid of asset cards with a checkbox on each: a click toggles one, a shift-click the range from the last one
 * clicked, "Select all on this page" the page; from the keyboard Space toggles the focused one, the arrow keys
 * move between the checkboxes (up and down by a row; Home, End) and Shift with an arrow selects on the way.
 */
export function AssetGrid({ items, links, label, selected, onSelect }: AssetGridProps) {
  const anchor = useRef<string>();
  const list = useRef<HTMLUListElement>(null);
  const order = items.map((a) => a.id);
  const all = pageState(order, selected);

  const focusAt = (i: number) => list.current?.querySelectorAll<HTMLInputElement>('input.pick')[i]?.focus();

  const onKey = (e: KeyboardEvent, i: number) => {
    const next = gridMove(i, e.key, columnsOf(list.current), items.length);
    if (next === undefined) return;
    e.preventDefault();
    const target = order[next] as string;
    if (e.shiftKey) {
      anchor.current ??= order[i];
      onSelect([...selected, ...rangeIds(order, anchor.current, target).filter((id) => !selected.includes(id))]);
    }
    focusAt(next);
  };

  return (
    <>
      {items.length > 0 && (
        <label class="select-page">
          <input type="checkbox" checked={all === 'all'} indeterminate={all === 'some'} onClick={() => onSelect(togglePage(order, selected))} />
          Select all on this page
        </label>
      )}
      <ul class="grid" aria-label={label} ref={list}>
        {items.map((a, i) => {
          const on = selected.includes(a.id);
          return (
            <li key={a.id} class={on ? 'pickable picked' : 'pickable'}>
              <input
                type="checkbox"
                class="pick"
                aria-label={`Select ${a.name}`}
                checked={on}
                onClick={(e) => {
                  // Not preventDefault: the browser would restore the box after the render. The box toggled as the
                  // selection does; a change refused (the limit) is put back by the render that shows the reason.
                  onSelect(clickSelect(order, selected, anchor.current, a.id, e.shiftKey));
                  anchor.current = a.id;
                }}
                onKeyDown={(e) => onKey(e, i)}
              />
              <Link href={`/assets/${a.id}`} class="card" data-asset-id={a.id} data-status={a.status}>
                <Thumb url={links.get(a.id)} thumbhash={a.thumbhash} label={kindLabel(a.content_type, a.name)} />
                <span class="meta">
                  <span class="name" title={a.name}>
                    {a.name}
                  </span>
                  <StatusBadge status={a.status} />
                  <span class="muted">
                    {formatBytes(a.size)} · {a.content_type}
                  </span>
                </span>
              </Link>
            </li>
          );
        })}
      </ul>
    </>
  );
}
