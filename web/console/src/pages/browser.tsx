import { useEffect, useRef, useState } from 'preact/hooks';
import { AssetGrid } from '../components/asset-grid';
import { SelectionBar } from '../components/selection-bar';
import { conversionsOf } from '../lib/asset';
import { useSelection } from '../lib/basket';
import { thumbnailKey } from '../lib/conversions';
import { displayLinks } from '../lib/links';
import { readSearchState, runSearch, SORTS, writeSearchState, type SearchPage, type SearchState } from '../lib/search';
import { Link, navigate } from '../router';
import { api, errorText, type Session } from '../session';
import { ErrorNotice } from '../components/status';

/** While an asset on the page is still being processed the search runs again every 2 s, otherwise every 10 s. */
const REFRESH_BUSY_MS = 2000;
const REFRESH_IDLE_MS = 10_000;

type FacetValue = { value?: unknown; count?: number };

function FacetChecks(props: { legend: string; values: FacetValue[]; checked: string[]; format?: (v: string) => string; onToggle: (v: string) => void }) {
  const seen = new Set(props.values.map((v) => String(v.value)));
  const all = [...props.values, ...props.checked.filter((c) => !seen.has(c)).map((c) => ({ value: c, count: 0 }))];
  if (all.length === 0) return null;
  return (
    <fieldset>
      <legend>{props.legend}</legend>
      {all.map((v) => {
        const value = String(v.value);
        return (
          <label key={value}>
            <input type="checkbox" checked={props.checked.includes(value)} onChange={() => props.onToggle(value)} />
            <span>{props.format ? props.format(value) : value}</span>
            <span class="count">{v.count ?? 0}</span>
          </label>
        );
      })}
    </fieldset>
  );
}

export function BrowserPage({ session, query }: { session: Session; query: URLSearchParams }) {
  const state = readSearchState(query);
  const stateKey = writeSearchState(state);
  const [text, setText] = useState(state.q);
  const [sort, setSort] = useState(state.sort);
  const [result, setResult] = useState<SearchPage>();
  const [error, setError] = useState<string>();
  const [links, setLinks] = useState<Map<string, string>>(new Map());
  const [tick, setTick] = useState(0);
  const latest = useRef(0);
  const selection = useSelection(session);

  useEffect(() => {
    setText(state.q);
    setSort(state.sort);
  }, [stateKey]);

  useEffect(() => {
    const n = ++latest.current;
    const client = api(session);
    runSearch(client, state)
      .then(async (page) => {
        if (n !== latest.current) return;
        setResult(page);
        setError(undefined);
        const wanted = page.results.flatMap((a) => {
          const key = a.status === 'OK' || a.status === 'ERROR' ? thumbnailKey(conversionsOf(a), a.content_type) : undefined;
          return key ? [{ id: a.id, key, version: a.update_time }] : [];
        });
        const got = wanted.length ? await displayLinks(client, wanted) : new Map<string, string>();
        if (n === latest.current) setLinks(got);
      })
      .catch((err: unknown) => {
        if (n === latest.current) setError(errorText(err, 'The search failed'));
      });
  }, [stateKey, tick]);

  const busy = result?.results.some((a) => a.status === 'NOT_READY') ?? false;
  useEffect(() => {
    const t = setTimeout(() => setTick((x) => x + 1), busy ? REFRESH_BUSY_MS : REFRESH_IDLE_MS);
    return () => clearTimeout(t);
  }, [result, error, busy]);

  const go = (next: Partial<SearchState>) => navigate(`/${writeSearchState({ ...state, page: 1, ...next })}`);
  const toggle = (list: string[], v: string) => (list.includes(v) ? list.filter((x) => x !== v) : [...list, v]);
  const facets = (result?.facets ?? {}) as Record<string, FacetValue[]>;

  return (
    <>
      <h1>Assets</h1>
      <form
        role="search"
        class="panel row"
        onSubmit={(e) => {
          e.preventDefault();
          go({ q: text, sort });
        }}
      >
        <div class="field">
          <label for="search-q">Search</label>
          <input
            id="search-q"
            type="search"
            size={40}
            placeholder="Words in names, data, tags or text"
            value={text}
            onInput={(e) => setText(e.currentTarget.value)}
          />
        </div>
        <div class="field">
          <label for="search-sort">Sort</label>
          <select id="search-sort" value={sort} onChange={(e) => go({ q: text, sort: e.currentTarget.value })}>
            {SORTS.map((s) => (
              <option key={s.value} value={s.value}>
                {s.label}
              </option>
            ))}
          </select>
        </div>
        <div class="field">
          <button type="submit">Search</button>
        </div>
      </form>
      <ErrorNotice text={error} />
      <div class="browser">
        <aside class="facets" aria-label="Filters">
          <FacetChecks legend="Type" values={facets.content_type ?? []} checked={state.types} onToggle={(v) => go({ types: toggle(state.types, v) })} />
          <FacetChecks legend="Status" values={facets.status ?? []} checked={state.statuses} onToggle={(v) => go({ statuses: toggle(state.statuses, v) })} />
          <FacetChecks
            legend="Uploaded by"
            values={facets.creator_id ?? []}
            checked={state.creator === undefined ? [] : [String(state.creator)]}
            format={(v) => (v === String(session.userId) ? `me (user ${v})` : `user ${v}`)}
            onToggle={(v) => go({ creator: state.creator === Number(v) ? undefined : Number(v) })}
          />
          {(facets.tags?.length ?? 0) > 0 && (
            <fieldset>
              <legend>Tags</legend>
              <div class="tag-list">
                {facets.tags?.map((t) => (
                  <button key={String(t.value)} type="button" class="secondary" onClick={() => go({ q: `${state.q} ${String(t.value)}`.trim() })}>
                    {String(t.value)} <span class="count">({t.count ?? 0})</span>
                  </button>
                ))}
              </div>
            </fieldset>
          )}
        </aside>
        <section aria-labelledby="results-heading">
          <h2 id="results-heading" aria-live="polite">
            {result ? `${result.total}${result.total_is_capped ? '+' : ''} asset${result.total === 1 ? '' : 's'}` : 'Searching…'}
          </h2>
          <SelectionBar session={session} selection={selection} onChanged={() => setTick((x) => x + 1)} />
          {result && result.results.length === 0 && (
            <p>
              Nothing found. <Link href="/upload">Upload files</Link>
            </p>
          )}
          <AssetGrid
            items={(result?.results ?? []).map((a) => ({ ...a, thumbhash: a.metadata?.thumbhash }))}
            links={links}
            label="Search results"
            selected={selection.ids}
            onSelect={(next) => selection.change(next, result?.results ?? [])}
          />
          {result && result.pages > 1 && (
            <nav class="pager" aria-label="Pages">
              <button
                type="button"
                class="secondary"
                disabled={result.page <= 1}
                onClick={() => navigate(`/${writeSearchState({ ...state, page: result.page - 1 })}`)}
              >
                Previous page
              </button>
              <span>
                Page {result.page} of {result.pages}
              </span>
              <button
                type="button"
                class="secondary"
                disabled={result.page >= result.pages}
                onClick={() => navigate(`/${writeSearchState({ ...state, page: result.page + 1 })}`)}
              >
                Next page
              </button>
            </nav>
          )}
        </section>
      </div>
    </>
  );
}
