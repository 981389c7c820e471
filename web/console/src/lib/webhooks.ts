/**
 * The Webhooks page's pure rules: a delivery's last answer in words, and the reissue range checked in the browser
 * as Reissue callbacks checks it (CONTRACT §10, seed §18: end after start, at most 7 days; 400 otherwise).
 */
export interface DeliveryAnswer {
  response_code: number | null;
  error: string | null;
  attempt_count: number;
}

export function lastAnswer(d: DeliveryAnswer): string {
  if (d.attempt_count === 0) return 'Not tried yet';
  if (d.response_code !== null) return d.error ? `HTTP ${d.response_code}: ${d.error}` : `HTTP ${d.response_code}`;
  return d.error ?? 'No answer';
}

export const REISSUE_MAX_MS = 7 * 24 * 3_600_000;

/** `datetime-local` values (the reader's time) as instants; the message a field shows, by field. */
export function reissueRange(
  start: string,
  end: string,
): { start_date: string; end_date: string } | { errors: Record<'start_date' | 'end_date', string | undefined> } {
  const s = Date.parse(start);
  const e = Date.parse(end);
  const errors: Record<'start_date' | 'end_date', string | undefined> = { start_date: undefined, end_date: undefined };
  if (!start || Number.isNaN(s)) errors.start_date = 'Give the start of the range.';
  if (!end || Number.isNaN(e)) errors.end_date = 'Give the end of the range.';
  else if (!errors.start_date && e <= s) errors.end_date = 'The end must be after the start.';
  else if (!errors.start_date && e - s > REISSUE_MAX_MS) errors.end_date = 'The range may be at most 7 days.';
  if (errors.start_date || errors.end_date) return { errors };
  return { start_date: new Date(s).toISOString(), end_date: new Date(e).toISOString() };
}

/** A `datetime-local` value (minutes, the reader's zone) for an instant. */
export function localInput(ms: number): string {
  const d = new Date(ms - new Date(ms).getTimezoneOffset() * 60_000);
  return d.toISOString().slice(0, 16);
}
