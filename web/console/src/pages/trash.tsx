import { useEffect, useState } from 'preact/hooks';
import { formatBytes, formatTime } from '../lib/format';
import { runSearch, type SearchPage } from '../lib/search';
import { Link } from '../router';
import { api, errorText, type Session } from '../session';
import { handler } from '../lib/handler';
import { ConfirmButton } from '../components/confirm-button';

/** The trash (ADMIN): what Search finds with `trashed: true`, Undelete per asset, and Purge for all of it. */
export function TrashPage({ session }: { session: Session }) {
  const [page, setPage] = useState(1);
  const [result, setResult] = useState<SearchPage>();
  const [message, setMessage] = useState<{ text: string; error?: boolean }>();
  const [tick, setTick] = useState(0);

  useEffect(() => {
    runSearch(api(session), { q: '', types: [], statuses: [], sort: 'update_time:desc', page }, { trashed: true })
      .then(setResult)
      .catch((err: unknown) => setMessage({ text: errorText(err), error: true }));
  }, [page, tick]);

  const undelete = async (id: string, name: string) => {
    const { data, error } = await api(session).POST('/api/v1/assets/trash/{asset_id}/undelete', {
      params: { path: { asset_id: id } },
      body: { keys: ['original'] },
    });
    setMessage(data ? { text: `${name} restored` } : { text: errorText(error), error: true });
    setTick((x) => x + 1);
  };

  const purge = async () => {
    const { data, error } = await api(session).DELETE('/api/v1/assets/trash/purge');
    setMessage(data ? { text: `Purge queued as job ${data.job_id}` } : { text: errorText(error), error: true });
    setTick((x) => x + 1);
  };

  return (
    <>
      <h1>Trash</h1>
      {message && (
        <p class={message.error ? 'notice error' : 'notice ok'} role="status">
          {message.text}
        </p>
      )}
      <div class="panel">
        <div class="row">
          <ConfirmButton
            label="Purge the trash"
            question="Remove every asset in the trash for good?"
            confirm="Yes, purge"
            disabled={!result || result.total === 0}
            onConfirm={purge}
            onError={(err) => setMessage({ text: errorText(err), error: true })}
          />
        </div>
        <table>
          <caption class="muted">{result ? `${result.total} asset${result.total === 1 ? '' : 's'} in the trash` : 'Loading…'}</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Type</th>
              <th scope="col">Size</th>
              <th scope="col">Deleted</th>
              <th scope="col">
                <span class="muted">Action</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {result?.results.map((a) => (
              <tr key={a.id} data-asset-id={a.id}>
                <th scope="row">{a.name}</th>
                <td>{a.content_type}</td>
                <td>{formatBytes(a.size)}</td>
                <td>{formatTime(a.update_time)}</td>
                <td>
                  <button
                    type="button"
                    class="secondary"
                    onClick={handler(
                      () => undelete(a.id, a.name),
                      (err) => setMessage({ text: errorText(err), error: true }),
                    )}
                    aria-label={`Undelete ${a.name}`}
                  >
                    Undelete
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
        {result && result.pages > 1 && (
          <nav class="pager" aria-label="Pages">
            <button type="button" class="secondary" disabled={page <= 1} onClick={() => setPage(page - 1)}>
              Previous page
            </button>
            <span>
              Page {result.page} of {result.pages}
            </span>
            <button type="button" class="secondary" disabled={page >= result.pages} onClick={() => setPage(page + 1)}>
              Next page
            </button>
          </nav>
        )}
        <p>
          <Link href="/">Back to the assets</Link>
        </p>
      </div>
    </>
  );
}
