import { ConfigError } from '@dam/config';

/**
 * Runs a service's start-up. A failure exits 1; a configuration problem is the operator's to fix, so it
 * prints the list of bad variables without a stack trace.
 */
export function runMain(main: () => Promise<void>): void {
  main().catch((err: unknown) => {
    console.error(err instanceof ConfigError ? err.message : err);
    process.exit(1);
  });
}
