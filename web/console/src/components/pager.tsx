import { useEffect, useRef } from 'preact/hooks';

/**
 * Previous and next page of a list, with where the reader is (announced when it changes). A button that the move
 * disables (the first or last page reached) would drop the keyboard's focus to the page's top: it goes to the other
 * button instead. Buttons, not links: the list changes in place. It wraps at a phone's width.
 */
export function Pager({ page, pages, onPage, label = 'Pages' }: { page: number; pages: number; onPage: (p: number) => void; label?: string }) {
  const previous = useRef<HTMLButtonElement>(null);
  const next = useRef<HTMLButtonElement>(null);
  /** The button to focus once the new page is drawn (and that button enabled). */
  const focusNext = useRef<HTMLButtonElement | null>(null);
  useEffect(() => {
    focusNext.current?.focus();
    focusNext.current = null;
  }, [page]);
  if (pages <= 1) return null;
  const go = (to: number) => {
    focusNext.current = to <= 1 ? next.current : to >= pages ? previous.current : null;
    onPage(to);
  };
  return (
    <nav class="pager" aria-label={label}>
      <button ref={previous} type="button" class="secondary" disabled={page <= 1} onClick={() => go(page - 1)}>
        Previous page
      </button>
      <span aria-live="polite">
        Page {page} of {pages}
      </span>
      <button ref={next} type="button" class="secondary" disabled={page >= pages} onClick={() => go(page + 1)}>
        Next page
      </button>
    </nav>
  );
}
