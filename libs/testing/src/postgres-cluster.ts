import { chmodSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { run, scriptStopper } from './exec';
import { freePort } from './free-port';
import { infraScript } from './paths';

export interface RunningServer {
  /** Stops the server and removes its files. */
  stop(): Promise<void>;
  /** Synchronous variant for process 'exit'. */
  stopSync(): void;
}

export interface PostgresCluster extends RunningServer {
  /** Admin URL (database `postgres`, user `postgres`, trust auth). */
  url: string;
  /** Stops the server, keeping its data (an outage). */
  pause(): Promise<void>;
  /** Starts it again on the same port with the same data. */
  resume(): Promise<void>;
}

/** A throwaway PostgreSQL cluster in a temp folder on a free port (deploy/infra/postgres.sh). */
export async function startPostgresCluster(): Promise<PostgresCluster> {
  const base = mkdtempSync(path.join(os.tmpdir(), 'dam-pg-'));
  // The cluster runs as the postgres user, which must be able to reach its folder.
  chmodSync(base, 0o755);
  const dir = path.join(base, 'data');
  const port = await freePort();
  const script = infraScript('postgres.sh');
  await run(script, ['start', dir, String(port)]);
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    pause: async () => void (await run(script, ['stop', dir])),
    resume: async () => void (await run(script, ['start', dir, String(port)])),
    ...scriptStopper(script, dir, base),
  };
}
