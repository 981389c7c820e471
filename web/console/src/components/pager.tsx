/** Previous and next page of a list, with where the reader is. */
export function Pager({ page, pages, onPage, label = 'Pages' }: { page: number; pages: number; onPage: (p: number) => void; label?: string }) {
  if (pages <= 1) return null;
  return (
    <nav class="pager" aria-label={label}>
      <button type="button" class="secondary" disabled={page <= 1} onClick={() => onPage(page - 1)}>
        Previous page
      </button>
      <span>
        Page {page} of {pages}
      </span>
      <button type="button" class="secondary" disabled={page >= pages} onClick={() => onPage(page + 1)}>
        Next page
      </button>
    </nav>
  );
}
