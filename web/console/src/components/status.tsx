/** A status as text (never colour alone): asset statuses and job statuses. */
export function StatusBadge({ status }: { status: string }) {
  return <span class={`status status-${status}`}>{status}</span>;
}

/** The API's error (or the browser's), in its words, announced at once; nothing when there is none. */
export function ErrorNotice({ text }: { text: string | undefined }) {
  if (!text) return null;
  return (
    <p class="notice error" role="alert">
      {text}
    </p>
  );
}
