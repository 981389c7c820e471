import { chmodSync, copyFileSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { run, scriptStopper } from './exec';
import { freePort } from './free-port';
import { infraScript } from './paths';
import { waitFor } from './wait-for';

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

export interface PostgresClusterOptions {
  /** Serve TLS (`ssl = on`, plain connections still accepted) with this certificate and key (see tls-certs.ts). */
  tls?: { certFile: string; keyFile: string };
}

/** A throwaway PostgreSQL cluster in a temp folder on a free port (deploy/infra/postgres.sh). */
export async function startPostgresCluster(opts: PostgresClusterOptions = {}): Promise<PostgresCluster> {
  const base = mkdtempSync(path.join(os.tmpdir(), 'dam-pg-'));
  // The cluster runs as the postgres user, which must be able to reach its folder.
  chmodSync(base, 0o755);
  const dir = path.join(base, 'data');
  const port = await freePort();
  const script = infraScript('postgres.sh');
  await run(script, ['start', dir, String(port)]);
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  const stopper = scriptStopper(script, dir, base);
  if (opts.tls) {
    try {
      await enableTls(url, base, opts.tls);
    } catch (err) {
      await stopper.stop();
      throw err;
    }
  }
  return {
    url,
    pause: async () => void (await run(script, ['stop', dir])),
    resume: async () => void (await run(script, ['start', dir, String(port)])),
    ...stopper,
  };
}

/**
 * Turns TLS on in a running cluster (kept in postgresql.auto.conf, so across pause/resume). The server reads its key
 * only when the server's user owns it and no one else can read it: both are copied beside the data folder.
 */
async function enableTls(url: string, base: string, tls: { certFile: string; keyFile: string }): Promise<void> {
  const certFile = path.join(base, 'server.crt');
  const keyFile = path.join(base, 'server.key');
  copyFileSync(tls.certFile, certFile);
  copyFileSync(tls.keyFile, keyFile);
  chmodSync(keyFile, 0o600);
  if (process.getuid?.() === 0) await run('chown', ['postgres:postgres', certFile, keyFile]);
  const admin = new Client({ connectionString: url });
  await admin.connect();
  try {
    await admin.query(`ALTER SYSTEM SET ssl_cert_file = '${certFile}'`);
    await admin.query(`ALTER SYSTEM SET ssl_key_file = '${keyFile}'`);
    await admin.query('ALTER SYSTEM SET ssl = on');
    await admin.query('SELECT pg_reload_conf()');
  } finally {
    await admin.end();
  }
  // The reload is asynchronous: wait until a new connection gets TLS (not verified here; the tests do that).
  await waitFor(
    async () => {
      const probe = new Client({ connectionString: url, ssl: { rejectUnauthorized: false } });
      await probe.connect();
      try {
        return (await probe.query<{ ssl: boolean }>('SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()')).rows[0]?.ssl === true;
      } finally {
        await probe.end();
      }
    },
    { description: 'PostgreSQL serving TLS' },
  );
}
