/**
 * Last-resort cleanup: servers and service processes started by a test file (or by global setup) are killed
 * when the process exits, even when a test forgot `stop()` or jest bailed out, so no stray servers remain.
 * Handlers must be synchronous: they run inside process 'exit'.
 */
const handlers = new Set<() => void>();
let installed = false;

export function onProcessExit(handler: () => void): () => void {
  if (!installed) {
    installed = true;
    process.on('exit', () => {
      for (const h of handlers) {
        try {
          h();
        } catch {
          // Nothing useful can be done while exiting.
        }
      }
    });
  }
  handlers.add(handler);
  return () => handlers.delete(handler);
}
