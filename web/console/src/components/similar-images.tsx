import { useEffect, useRef, useState } from 'preact/hooks';
import { conversionsOf, kindLabel, type AssetData } from '../lib/asset';
import { thumbnailKey } from '../lib/conversions';
import { displayLinks } from '../lib/links';
import { Link } from '../router';
import { api, errorText, type Session } from '../session';
import { Pager } from './pager';
import { Thumb } from './thumb';
import './usage.css';
import { ErrorNotice } from './status';

const PAGE = 12;
type Item = { id: string; distance: number };

/**
 * Near-duplicates (CONTRACT §14, `GET /assets/{id}/similar`): the assets whose perceptual hash is within the
 * chosen number of bits, nearest first, each with its distance, a page at a time (the API answers at most 50).
 */
export function SimilarImages({ session, asset }: { session: Session; asset: AssetData }) {
  const [maxDistance, setMaxDistance] = useState('8');
  const [items, setItems] = useState<Item[]>();
  const [error, setError] = useState<string>();
  const [page, setPage] = useState(1);
  const [details, setDetails] = useState<Record<string, { name: string; data?: AssetData; url?: string } | undefined>>({});
  const latest = useRef(0);
  const valid = /^([0-9]|[12][0-9]|3[0-2])$/.test(maxDistance);

  useEffect(() => {
    if (!valid) return;
    const n = ++latest.current;
    api(session)
      .GET('/api/v1/assets/{asset_id}/similar', { params: { path: { asset_id: asset.id }, query: { max_distance: Number(maxDistance) } } })
      .then(({ data, error: err }) => {
        if (n !== latest.current) return;
        if (data) {
          setItems(data.items);
          setError(undefined);
          setPage(1);
        } else setError(errorText(err));
      })
      .catch((err: unknown) => n === latest.current && setError(errorText(err)));
  }, [asset.id, asset.update_time, maxDistance]);

  const shown = (items ?? []).slice((page - 1) * PAGE, page * PAGE);
  // Names and thumbnails of the page shown: Get Data of each, then one bulk Get Link per thumbnail key.
  useEffect(() => {
    const missing = shown.filter((i) => !details[i.id]);
    if (missing.length === 0) return;
    const client = api(session);
    void Promise.all(
      missing.map(async (i) => {
        const { data } = await client.GET('/api/v1/assets/{asset_id}/data', { params: { path: { asset_id: i.id } } });
        return [i.id, data] as const;
      }),
    )
      .then(async (got) => {
        const wanted = got.flatMap(([id, d]) => {
          const key = d ? thumbnailKey(conversionsOf(d), d.content_type) : undefined;
          return d && key ? [{ id, key, version: d.update_time }] : [];
        });
        const urls = await displayLinks(client, wanted).catch(() => new Map<string, string>());
        setDetails((old) => {
          const next = { ...old };
          for (const [id, d] of got) next[id] = d ? { name: d.name, data: d, ...(urls.get(id) ? { url: urls.get(id) } : {}) } : { name: id };
          return next;
        });
      })
      .catch(() => undefined);
  }, [items, page]);

  return (
    <>
      <form class="row" onSubmit={(e) => e.preventDefault()} aria-label="Similar images">
        <div class="field">
          <label for="similar-max">Most differing bits (0-32)</label>
          <input
            id="similar-max"
            type="number"
            min={0}
            max={32}
            value={maxDistance}
            aria-invalid={!valid}
            aria-describedby={valid ? undefined : 'similar-max-error'}
            onInput={(e) => setMaxDistance(e.currentTarget.value)}
          />
          {!valid && (
            <span id="similar-max-error" class="error">
              A whole number from 0 to 32.
            </span>
          )}
        </div>
      </form>
      <ErrorNotice text={error} />
      {!items && !error && <p class="muted">Loading…</p>}
      {items && items.length === 0 && (
        <p class="muted">No similar images{asset.metadata?.phash ? ` within ${maxDistance} bits` : ' (this asset has no perceptual hash yet)'}.</p>
      )}
      {items && items.length > 0 && (
        <>
          <ul class="similar-list" aria-label={`${items.length} similar image${items.length === 1 ? '' : 's'}, nearest first`}>
            {shown.map((i) => {
              const d = details[i.id];
              return (
                <li key={i.id} data-similar-id={i.id} data-distance={i.distance}>
                  <Link href={`/assets/${i.id}`}>
                    <Thumb url={d?.url} thumbhash={d?.data?.metadata?.thumbhash} label={d?.data ? kindLabel(d.data.content_type, d.data.name) : 'IMG'} />
                    <span class="name">{d?.name ?? `${i.id.slice(0, 8)}…`}</span>
                  </Link>
                  <span class="muted">
                    distance {i.distance} bit{i.distance === 1 ? '' : 's'}
                  </span>
                </li>
              );
            })}
          </ul>
          <Pager page={page} pages={Math.ceil(items.length / PAGE)} onPage={setPage} label="Pages of similar images" />
        </>
      )}
    </>
  );
}
