import { useEffect, useRef, useState } from 'preact/hooks';
import type { components } from '@dam/client';
import { AssetGrid, type GridAsset } from '../components/asset-grid';
import { Pager } from '../components/pager';
import { conversionsOf } from '../lib/asset';
import { refreshSelection } from '../lib/basket';
import { thumbnailKey } from '../lib/conversions';
import { handler } from '../lib/handler';
import { displayLinks } from '../lib/links';
import { BASKET, COLLECTION_MAX_ASSETS } from '../lib/selection';
import { Link } from '../router';
import { api, can, errorText, type Session } from '../session';
import { Fill } from './collections';

type Collection = components['schemas']['Collection'];
const PAGE_SIZE = 24;

/**
 * One collection: its assets as the grid of the Assets page (in the order they were added, paged), how full it is,
 * and Remove from collection for the assets checked here. Thumbnails come from the search of the collection's
 * members (the collection's own list carries no conversions).
 */
export function CollectionPage({ session, id }: { session: Session; id: string }) {
  const [page, setPage] = useState(1);
  const [data, setData] = useState<{ collection: Collection; items: GridAsset[]; total: number }>();
  const [links, setLinks] = useState<Map<string, string>>(new Map());
  const [checked, setChecked] = useState<string[]>([]);
  const [message, setMessage] = useState<{ text: string; error?: boolean }>();
  const [tick, setTick] = useState(0);
  const latest = useRef(0);

  useEffect(() => {
    const n = ++latest.current;
    const client = api(session);
    client
      .GET('/api/v1/collections/{collection_id}', { params: { path: { collection_id: id }, query: { page, page_size: PAGE_SIZE } } })
      .then(async ({ data: got, error }) => {
        if (n !== latest.current) return;
        if (!got) {
          setMessage({ text: errorText(error), error: true });
          return;
        }
        const { items, page: _p, page_size: _s, total, ...collection } = got;
        setData({ collection, items, total });
        if (page > 1 && items.length === 0 && total > 0) setPage(Math.ceil(total / PAGE_SIZE));
        // Thumbnails: the members' conversions from the search (its read model may lag a moment behind).
        const found = await client.POST('/api/v1/assets/search', {
          body: {
            filters: { collection_id: got.collection_id },
            page_size: 100,
            extended: true,
            sort: [{ field: 'upload_time', order: 'desc' }],
            facets: [],
            trashed: false,
          },
        });
        const wanted = (found.data?.results ?? []).flatMap((a) => {
          const full = a as unknown as {
            id: string;
            status: string;
            content_type: string;
            update_time: string;
            conversions?: unknown;
            metadata?: { thumbhash?: unknown };
          };
          const key = full.status === 'OK' || full.status === 'ERROR' ? thumbnailKey(conversionsOf(full), full.content_type) : undefined;
          return key && items.some((i) => i.id === full.id) ? [{ id: full.id, key, version: full.update_time }] : [];
        });
        const got2 = wanted.length ? await displayLinks(client, wanted) : new Map<string, string>();
        if (n === latest.current) setLinks(got2);
      })
      .catch((err: unknown) => n === latest.current && setMessage({ text: errorText(err), error: true }));
  }, [id, page, tick]);

  const remove = async () => {
    const ids = checked;
    const { data: after, error } = await api(session).DELETE('/api/v1/collections/{collection_id}/assets', {
      params: { path: { collection_id: id } },
      body: { ids },
    });
    if (!after) {
      setMessage({ text: errorText(error), error: true });
      return;
    }
    setChecked([]);
    if (after.name === BASKET) refreshSelection(session);
    setMessage({ text: `${ids.length} removed from ${after.name}; the assets stay in the library` });
    setTick((x) => x + 1);
  };

  const c = data?.collection;
  const pages = Math.max(1, Math.ceil((data?.total ?? 0) / PAGE_SIZE));
  return (
    <>
      <p>
        <Link href="/collections">All collections</Link>
      </p>
      <h1>{c ? c.name : 'Collection'}</h1>
      {message && (
        <p class={message.error ? 'notice error' : 'notice ok'} role="status">
          {message.text}
        </p>
      )}
      {c && (
        <div class="panel">
          <p>
            {c.shared ? 'Shared with the group' : 'Private'} · <Fill count={c.asset_count} />
          </p>
          <p class="muted">
            {c.name === BASKET
              ? 'Your selection on the Assets page: selecting and unselecting there changes it.'
              : `A collection holds at most ${COLLECTION_MAX_ASSETS} assets (assets in the trash count too); adding past that is refused and nothing is added. Add assets from the Assets page: select them, then Add to collection.`}
          </p>
          {can(session, 'MANAGE_COLLECTIONS') && (
            <div class="row selection-bar" aria-live="polite">
              <span>
                <strong>{checked.length} checked</strong>
              </span>
              <button
                type="button"
                class="danger"
                disabled={checked.length === 0}
                onClick={handler(remove, (err) => setMessage({ text: errorText(err), error: true }))}
              >
                Remove from collection
              </button>
            </div>
          )}
        </div>
      )}
      <section aria-labelledby="collection-assets">
        <h2 id="collection-assets">{data ? `${data.total} asset${data.total === 1 ? '' : 's'}` : 'Loading…'}</h2>
        {data && data.total === 0 && (
          <p>
            Nothing in it yet. <Link href="/">Select assets to add</Link>
          </p>
        )}
        <AssetGrid items={data?.items ?? []} links={links} label="Assets in the collection" selected={checked} onSelect={setChecked} />
        <Pager page={page} pages={pages} onPage={setPage} label="Pages of the collection" />
      </section>
    </>
  );
}
