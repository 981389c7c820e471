import { useEffect, useState } from 'preact/hooks';
import { formatBytes, formatTime } from '../lib/format';
import { runSearch, type SearchPage } from '../lib/search';
import { Link } from '../router';
import { api, errorText, type Session } from '../session';
import { handler } from '../lib/handler';
import { ConfirmButton } from '../components/confirm-button';
import { counted, DataTable } from '../components/data-table';

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
        <DataTable
          caption={result && `${counted(result.total, 'asset')} in the trash`}
          columns={['Name', 'Type', 'Size', 'Deleted', { label: 'Action', muted: true }]}
          pager={result && { page: result.page, pages: result.pages, onPage: setPage, label: 'Pages of the trash' }}
        >
          {result?.results.map((a) => (
            <tr key={a.id} data-asset-id={a.id}>
              <th scope="row" data-label="Name">
                {a.name}
              </th>
              <td data-label="Type">{a.content_type}</td>
              <td data-label="Size">{formatBytes(a.size)}</td>
              <td data-label="Deleted">{formatTime(a.update_time)}</td>
              <td data-label="Action">
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
        </DataTable>
        <p>
          <Link href="/">Back to the assets</Link>
        </p>
      </div>
    </>
  );
}
