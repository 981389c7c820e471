import { useState } from 'preact/hooks';
import { handler } from '../lib/handler';

/**
 * Copies `text`: the Clipboard API where the page may use it, else the selected text of `fallback` (an input showing
 * it) the old way. What happened is said in a live region beside the button.
 */
export function CopyButton({ text, label, fallback }: { text: string; label: string; fallback?: () => HTMLInputElement | null }) {
  const [said, setSaid] = useState('');
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
    } catch {
      const input = fallback?.();
      input?.select();
      if (!input || !document.execCommand('copy')) throw new Error('Copying is not allowed here: select the text and copy it');
    }
    setSaid('Copied');
  };
  return (
    <>
      <button type="button" class="secondary" onClick={handler(copy, (err) => setSaid(err instanceof Error ? err.message : String(err)))}>
        {label}
      </button>
      <span role="status" class="muted">
        {said}
      </span>
    </>
  );
}
