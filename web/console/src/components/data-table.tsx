import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { pageCount } from '../lib/accounts';
import { errorText } from '../session';
import { Pager } from './pager';

/** A column's header: its name, or `{ label, muted: true }` for one named for readers only (e.g. "Actions"). */
export type Column = string | { label: string; muted: true };

export interface DataTableProps {
  /** What the table lists and how many, e.g. "26 users in your group"; undefined while loading ("Loading…"). */
  caption: ComponentChildren | undefined;
  columns: Column[];
  /**
   * At a phone's width each row becomes a card, each cell on its own line under its column's name: the cells carry
   * `data-label` (styles.css, table.stack). On by default; off for a table that already fits (two narrow columns).
   */
  stack?: boolean;
  /** The rows (`<tr>` with a `<th scope="row">`). */
  children: ComponentChildren;
  /** Its pages: shown below the table when there is more than one. */
  pager?: { page: number; pages: number; onPage: (page: number) => void; label: string };
}

/**
 * The console's list table: a caption (read first by a screen reader, and the count a sighted reader sees), column
 * headers with `scope="col"`, the page's own rows, and the pager under it.
 */
export function DataTable({ caption, columns, stack = true, children, pager }: DataTableProps) {
  return (
    <>
      <table class={stack ? 'stack' : undefined}>
        <caption class="muted">{caption ?? 'Loading…'}</caption>
        <thead>
          <tr>
            {columns.map((c) =>
              typeof c === 'string' ? (
                <th key={c} scope="col">
                  {c}
                </th>
              ) : (
                <th key={c.label} scope="col">
                  <span class="muted">{c.label}</span>
                </th>
              ),
            )}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
      {pager && <Pager {...pager} />}
    </>
  );
}

/** "1 user", "26 users". */
export const counted = (n: number, one: string, many = `${one}s`): string => `${n} ${n === 1 ? one : many}`;

export interface PagedList<T> {
  items: T[];
  total: number;
}

/** What an API client answers for one page of a list. */
type PageAnswer<T> = Promise<{ data?: PagedList<T> | undefined; error?: unknown }>;

/**
 * One page of a list from the API, read again when the page, `deps` or `reload()` change; an answer that comes
 * after a newer request's is dropped (a slow page 1 never overwrites page 2). The API's error, in its words, is
 * `error` (cleared by the next good answer), or goes to `onError` where the page shows it elsewhere.
 */
export function usePagedList<T>(
  load: (page: number) => PageAnswer<T>,
  deps: unknown[],
  pageSize: number,
  onError?: (text: string) => void,
): {
  page: number;
  setPage: (page: number) => void;
  pages: number;
  list: PagedList<T> | undefined;
  setList: (update: (list: PagedList<T> | undefined) => PagedList<T> | undefined) => void;
  error: string | undefined;
  setError: (text: string | undefined) => void;
  reload: () => void;
} {
  const [page, setPage] = useState(1);
  const [list, setList] = useState<PagedList<T>>();
  const [error, setError] = useState<string>();
  const [tick, setTick] = useState(0);
  const latest = useRef(0);
  const fail = (text: string) => (onError ? onError(text) : setError(text));

  useEffect(() => {
    const n = ++latest.current;
    load(page)
      .then(({ data, error: err }) => {
        if (n !== latest.current) return;
        if (data) {
          setList({ items: data.items, total: data.total });
          if (!onError) setError(undefined);
        } else fail(errorText(err));
      })
      .catch((err: unknown) => n === latest.current && fail(errorText(err)));
  }, [page, tick, ...deps]);

  return {
    page,
    setPage,
    pages: pageCount(list?.total ?? 0, pageSize),
    list,
    setList,
    error,
    setError,
    reload: () => setTick((x) => x + 1),
  };
}
