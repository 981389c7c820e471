import type { ComponentChildren } from 'preact';

/** One labelled control with its message underneath (`aria-describedby`): the browser's check or the API's 400. */
export function FormField({
  id,
  label,
  error,
  help,
  children,
}: {
  id: string;
  label: string;
  error?: string | undefined;
  help?: string;
  children: ComponentChildren;
}) {
  return (
    <div class="field">
      <label for={id}>{label}</label>
      {children}
      {help && (
        <span id={`${id}-help`} class="help">
          {help}
        </span>
      )}
      {error && (
        <span id={`${id}-error`} class="error" role="alert">
          {error}
        </span>
      )}
    </div>
  );
}

/** The id and `aria-*` of a control inside a FormField. */
export const describedBy = (id: string, error: string | undefined, help = false) => {
  const by = [help ? `${id}-help` : '', error ? `${id}-error` : ''].filter(Boolean).join(' ');
  return { id, 'aria-invalid': error ? true : undefined, 'aria-describedby': by || undefined };
};

/**
 * A labelled select of plain values, each shown as it is. `any`: an "Any" option (the empty value) first, as a
 * list's filter has; its `T` then includes ''.
 */
export function SelectField<T extends string>({
  id,
  label,
  value,
  options,
  onChange,
  any = false,
}: {
  id: string;
  label: string;
  value: T;
  options: readonly T[];
  onChange: (value: T) => void;
  any?: boolean;
}) {
  return (
    <div class="field">
      <label for={id}>{label}</label>
      <select id={id} value={value} onChange={(e) => onChange(e.currentTarget.value as T)}>
        {any && <option value="">Any</option>}
        {options.map((o) => (
          <option key={o} value={o}>
            {o}
          </option>
        ))}
      </select>
    </div>
  );
}
