/**
 * A contract error body (`{error: {code, message, details}}`) split for a form: each `details[]` item whose path
 * names a field of the form goes next to that field, a code that is about one field (EMAIL_TAKEN is about the
 * email) goes next to it too, and the rest is one message under the form. The words are the API's own.
 */
export interface FormErrors<F extends string> {
  fields: Partial<Record<F, string>>;
  general?: string;
}

interface ErrorBody {
  code?: unknown;
  message?: unknown;
  details?: unknown;
}

const bodyOf = (error: unknown): ErrorBody | undefined =>
  typeof error === 'object' && error !== null && 'error' in error && typeof (error as { error: unknown }).error === 'object'
    ? ((error as { error: ErrorBody | null }).error ?? undefined)
    : undefined;

export function formErrors<F extends string>(
  error: unknown,
  fields: readonly F[],
  byCode: Partial<Record<string, F>> = {},
  fallback = 'The request failed',
): FormErrors<F> {
  const e = bodyOf(error);
  const out: Partial<Record<F, string>> = {};
  const add = (f: F, message: string) => (out[f] = out[f] ? `${out[f]}; ${message}` : message);
  const isField = (s: string): s is F => (fields as readonly string[]).includes(s);
  const rest: string[] = [];
  for (const d of Array.isArray(e?.details) ? (e.details as unknown[]) : []) {
    if (typeof d !== 'object' || d === null) continue;
    const { path, message } = d as { path?: unknown; message?: unknown };
    if (typeof message !== 'string') continue;
    const name = typeof path === 'string' ? (path.split('.').pop() ?? '') : '';
    if (isField(name)) add(name, message);
    else rest.push(typeof path === 'string' && path ? `${path}: ${message}` : message);
  }
  const code = typeof e?.code === 'string' ? e.code : undefined;
  const message = typeof e?.message === 'string' ? e.message : error instanceof Error ? error.message : fallback;
  const codeField = code ? byCode[code] : undefined;
  if (codeField && Object.keys(out).length === 0) {
    add(codeField, `${message} (${code})`);
    return { fields: out };
  }
  if (Object.keys(out).length > 0 && rest.length === 0) return { fields: out };
  const head = code ? `${message} (${code})` : message;
  return { fields: out, general: rest.length > 0 ? `${head}: ${rest.join('; ')}` : head };
}

/** True when the form has anything to show. */
export const hasErrors = <F extends string>(e: FormErrors<F>): boolean => e.general !== undefined || Object.keys(e.fields).length > 0;
