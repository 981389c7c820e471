/** A status as text (never colour alone): asset statuses and job statuses. */
export function StatusBadge({ status }: { status: string }) {
  return <span class={`status status-${status}`}>{status}</span>;
}
