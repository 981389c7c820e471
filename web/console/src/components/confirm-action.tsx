import { useEffect, useRef, useState } from 'preact/hooks';
import { handler } from '../lib/handler';

export interface ConfirmActionProps {
  /** The button's text, e.g. "Revoke". */
  label: string;
  /** Its accessible name when the text alone is ambiguous in a list, e.g. "Revoke ci-pipeline". */
  name?: string;
  /** What stops working, asked before acting (announced). */
  question: string;
  /** The confirming button's text, e.g. "Yes, revoke". */
  confirm: string;
  disabled?: boolean;
  onConfirm: () => Promise<void>;
  onError: (err: unknown) => void;
}

/**
 * An action that ends something for good behind a confirm step: the button, then the question with Yes and
 * Cancel; the focus moves to Cancel (the safe choice) and comes back to the button when the step closes.
 */
export function ConfirmAction(props: ConfirmActionProps) {
  const [confirming, setConfirming] = useState(false);
  const [busy, setBusy] = useState(false);
  const cancel = useRef<HTMLButtonElement>(null);
  const opener = useRef<HTMLButtonElement>(null);
  const wasOpen = useRef(false);
  useEffect(() => {
    if (confirming) cancel.current?.focus();
    else if (wasOpen.current) opener.current?.focus();
    wasOpen.current = confirming;
  }, [confirming]);

  if (!confirming) {
    return (
      <button ref={opener} type="button" class="danger" aria-label={props.name} disabled={props.disabled || busy} onClick={() => setConfirming(true)}>
        {busy ? `${props.label}…` : props.label}
      </button>
    );
  }
  const act = async () => {
    setBusy(true);
    setConfirming(false);
    try {
      await props.onConfirm();
    } finally {
      setBusy(false);
    }
  };
  return (
    // Escape is Cancel, as in a dialog.
    <span class="confirm" role="group" aria-label={props.name ?? props.label} onKeyDown={(e) => e.key === 'Escape' && setConfirming(false)}>
      <span role="alert">{props.question}</span>{' '}
      <button type="button" class="danger" onClick={handler(act, props.onError)}>
        {props.confirm}
      </button>{' '}
      <button ref={cancel} type="button" class="secondary" onClick={() => setConfirming(false)}>
        Cancel
      </button>
    </span>
  );
}
