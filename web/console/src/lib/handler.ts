/**
 * An async event handler for JSX attributes: a rejection goes to `onError` (shown to the user) instead of
 * becoming an unhandled rejection. `preventDefault` runs first, synchronously, for form submits.
 */
export function handler<E extends Event>(fn: (e: E) => Promise<void>, onError: (err: unknown) => void): (e: E) => void {
  return (e) => {
    fn(e).catch(onError);
  };
}
