import { useState } from 'preact/hooks';
import { handler } from '../lib/handler';

export interface ConfirmButtonProps {
  /** The button's label, e.g. "Delete". */
  label: string;
  /** The question asked before acting (announced to screen readers). */
  question: string;
  /** The confirming button's label, e.g. "Yes, delete". */
  confirm: string;
  disabled?: boolean;
  onConfirm: () => Promise<void>;
  onError: (err: unknown) => void;
}

/** A destructive action behind a second, explicit click: the button, then the question with Yes and Cancel. */
export function ConfirmButton(props: ConfirmButtonProps) {
  const [confirming, setConfirming] = useState(false);
  if (!confirming) {
    return (
      <button type="button" class="danger" disabled={props.disabled} onClick={() => setConfirming(true)}>
        {props.label}
      </button>
    );
  }
  const act = async () => {
    setConfirming(false);
    await props.onConfirm();
  };
  return (
    <>
      <span role="alert">{props.question}</span>
      <button type="button" class="danger" onClick={handler(act, props.onError)}>
        {props.confirm}
      </button>
      <button type="button" class="secondary" onClick={() => setConfirming(false)}>
        Cancel
      </button>
    </>
  );
}
