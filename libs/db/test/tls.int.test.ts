import { spawn } from 'node:child_process';
import { copyFile, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import {
  createDatabase,
  createTestCa,
  issueServerCertificate,
  repoRoot,
  serviceIdentities,
  startPostgresCluster,
  startServiceProcess,
  testPgUrl,
  type PostgresCluster,
  type TestCa,
} from '@dam/testing';
import { createPool, DatabaseTlsError, type Pool } from '../src';

// Database TLS as the production form uses it (issue 31, review D3): `sslmode=verify-full&sslrootcert=<mounted CA>`
// against a PostgreSQL serving a certificate of a private CA (as CloudNativePG, RDS and Cloud SQL do).

let dir: string;
let ca: TestCa;
let otherCa: TestCa;
let pg: PostgresCluster;
/** A database on the TLS server, reached at 127.0.0.1 (the name its certificate carries). */
let dbUrl: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'db-tls-'));
  [ca, otherCa] = await Promise.all([createTestCa(dir, 'ca'), createTestCa(dir, 'other-ca')]);
  const server = await issueServerCertificate(ca, dir, 'server', ['IP:127.0.0.1']);
  pg = await startPostgresCluster({ tls: server });
  dbUrl = await createDatabase('tls', pg.url);
});
afterAll(async () => {
  await pg?.stop();
  await rm(dir, { recursive: true, force: true });
});

const withParams = (url: string, params: string, host?: string): string => {
  const u = new URL(url);
  if (host) u.hostname = host;
  return `${u.toString()}?${params}`;
};

async function tlsOf(pool: Pool): Promise<{ ssl: boolean; version: string }> {
  try {
    const { rows } = await pool.query<{ ssl: boolean; version: string }>('SELECT ssl, version FROM pg_stat_ssl WHERE pid = pg_backend_pid()');
    return rows[0]!;
  } finally {
    await pool.end();
  }
}

async function connectError(url: string): Promise<unknown> {
  const pool = createPool(url);
  try {
    await pool.query('SELECT 1');
    return undefined;
  } catch (err) {
    return err;
  } finally {
    await pool.end();
  }
}

describe('sslmode=verify-full with sslrootcert', () => {
  it('connects over TLS to a server whose certificate the CA signed and names the host', async () => {
    const pool = createPool(withParams(dbUrl, `sslmode=verify-full&sslrootcert=${ca.certFile}`));
    expect(await tlsOf(pool)).toEqual({ ssl: true, version: expect.stringMatching(/^TLSv1\.[23]$/) });
  });

  it('refuses a server its CA did not sign, at once, naming TLS and the CA', async () => {
    const err = await connectError(withParams(dbUrl, `sslmode=verify-full&sslrootcert=${otherCa.certFile}`));
    expect(err).toBeInstanceOf(DatabaseTlsError);
    expect((err as Error).message).toMatch(
      /^PostgreSQL TLS: the certificate of the server at 127\.0\.0\.1:\d+ was not verified with the CA in sslrootcert=\S+other-ca\.crt: /,
    );
    // The pool's own timeout (5 s) is not what ended it: the handshake itself failed.
    expect((err as Error).message).not.toMatch(/timeout/);
  });

  it('refuses a host name the certificate does not carry, naming TLS, the host and the CA', async () => {
    const err = await connectError(withParams(dbUrl, `sslmode=verify-full&sslrootcert=${ca.certFile}`, 'localhost'));
    expect(err).toBeInstanceOf(DatabaseTlsError);
    expect((err as Error).message).toMatch(
      /^PostgreSQL TLS: the certificate of the server at localhost:\d+ does not name the host "localhost" of DATABASE_URL/,
    );
    expect((err as Error).message).toContain(`CA: the CA in sslrootcert=${ca.certFile}`);
  });

  it('stops at createPool when the CA file is missing or holds no certificate (or a client certificate file is missing)', () => {
    expect(() => createPool(withParams(dbUrl, 'sslmode=verify-full&sslrootcert=/etc/dam/db-ca/missing.crt'))).toThrow(
      /^PostgreSQL TLS: the file sslrootcert=\/etc\/dam\/db-ca\/missing\.crt in DATABASE_URL cannot be read \(ENOENT\); mount the CA/,
    );
    expect(() => createPool(withParams(dbUrl, `sslmode=verify-full&sslrootcert=${ca.keyFile}`))).toThrow(/holds no PEM certificate/);
    expect(() => createPool(withParams(dbUrl, `sslmode=verify-full&sslrootcert=${ca.certFile}&sslcert=/nope/tls.crt&sslkey=/nope/tls.key`))).toThrow(
      /^PostgreSQL TLS: the file sslcert=\/nope\/tls\.crt in DATABASE_URL cannot be read \(ENOENT\)/,
    );
  });

  it('reads the CA file for each new connection: a CA replaced in its mount applies without a restart', async () => {
    // A Secret volume is updated in place by the kubelet; each new connection parses DATABASE_URL again.
    const mounted = path.join(dir, 'mounted-ca.crt');
    await copyFile(otherCa.certFile, mounted);
    const pool = createPool(withParams(dbUrl, `sslmode=verify-full&sslrootcert=${mounted}`));
    try {
      await expect(pool.query('SELECT 1')).rejects.toThrow(DatabaseTlsError);
      await copyFile(ca.certFile, mounted);
      expect((await pool.query<{ ssl: boolean }>('SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()')).rows[0]?.ssl).toBe(true);
    } finally {
      await pool.end();
    }
  });

  it('says so when the server does not speak TLS at all', async () => {
    const err = await connectError(withParams(testPgUrl(), `sslmode=verify-full&sslrootcert=${ca.certFile}`));
    expect(err).toBeInstanceOf(DatabaseTlsError);
    expect((err as Error).message).toMatch(/^PostgreSQL TLS: the server at 127\.0\.0\.1:\d+ does not accept TLS connections \(sslmode=verify-full\)/);
  });
});

describe('the other sslmode spellings, as node-postgres 8 reads them', () => {
  it('verifies sslmode=require like verify-full (an unknown CA is refused; with sslrootcert it connects)', async () => {
    // If this starts connecting, node-postgres gave `require` libpq's meaning (pg 9): no verification at all.
    const err = await connectError(withParams(dbUrl, 'sslmode=require'));
    expect(err).toBeInstanceOf(DatabaseTlsError);
    expect((err as Error).message).toMatch(
      /was not verified with Node\.js's trusted CAs \(DATABASE_URL names no sslrootcert; NODE_EXTRA_CA_CERTS is [^)]+\): .*sslmode=require, which node-postgres 8 verifies as verify-full/,
    );
    expect(await tlsOf(createPool(withParams(dbUrl, `sslmode=require&sslrootcert=${ca.certFile}`)))).toMatchObject({ ssl: true });
    // The host is checked too: that is what verify-full means.
    const host = await connectError(withParams(dbUrl, `sslmode=require&sslrootcert=${ca.certFile}`, 'localhost'));
    expect((host as Error).message).toMatch(/does not name the host "localhost"/);
  });

  it('gives libpq meanings with uselibpqcompat=true: require encrypts unverified, verify-ca skips the host, verify-full checks both', async () => {
    expect(await tlsOf(createPool(withParams(dbUrl, 'uselibpqcompat=true&sslmode=require')))).toMatchObject({ ssl: true });
    expect(await tlsOf(createPool(withParams(dbUrl, `uselibpqcompat=true&sslmode=verify-ca&sslrootcert=${ca.certFile}`, 'localhost')))).toMatchObject({
      ssl: true,
    });
    const wrongCa = await connectError(withParams(dbUrl, `uselibpqcompat=true&sslmode=verify-ca&sslrootcert=${otherCa.certFile}`));
    expect((wrongCa as Error).message).toMatch(/^PostgreSQL TLS: .* was not verified with the CA in sslrootcert=\S+other-ca\.crt: .*uselibpqcompat=true/);
    const wrongHost = await connectError(withParams(dbUrl, `uselibpqcompat=true&sslmode=verify-full&sslrootcert=${ca.certFile}`, 'localhost'));
    expect((wrongHost as Error).message).toMatch(/^PostgreSQL TLS: .*does not name the host "localhost"/);
  });
});

describe('where the URL is used', () => {
  const migrateCli = (args: string[], env: Record<string, string>) =>
    new Promise<{ code: number | null; out: string }>((resolve) => {
      const child = spawn(process.execPath, ['--import', 'tsx', path.join(__dirname, '..', 'src', 'migrate-cli.ts'), ...args], {
        cwd: repoRoot,
        env: { ...process.env, NODE_EXTRA_CA_CERTS: '', ...env },
      });
      let out = '';
      child.stdout.on('data', (c: Buffer) => (out += c.toString()));
      child.stderr.on('data', (c: Buffer) => (out += c.toString()));
      child.on('close', (code) => resolve({ code, out }));
    });

  it('the migrate CLI (init container) migrates over verify-full, or with the CA in NODE_EXTRA_CA_CERTS, and fails naming TLS and the CA', async () => {
    const url = await createDatabase('tlsmigrate', pg.url);
    const [good, bad] = await Promise.all([
      migrateCli(['search'], { DATABASE_URL: withParams(url, `sslmode=verify-full&sslrootcert=${ca.certFile}`) }),
      migrateCli(['search'], { DATABASE_URL: withParams(url, `sslmode=verify-full&sslrootcert=${otherCa.certFile}`) }),
    ]);
    expect(good).toMatchObject({ code: 0, out: expect.stringContaining('"msg":"migrations applied"') });
    // Node's trust store plus NODE_EXTRA_CA_CERTS, read at process start: the alternative to sslrootcert.
    const extra = await migrateCli(['search'], { DATABASE_URL: withParams(url, 'sslmode=verify-full'), NODE_EXTRA_CA_CERTS: ca.certFile });
    expect(extra).toMatchObject({ code: 0, out: expect.stringContaining('"applied":[]') });
    expect(bad.code).toBe(1);
    expect(bad.out).toMatch(
      /"msg":"PostgreSQL TLS: the certificate of the server at 127\.0\.0\.1:\d+ was not verified with the CA in sslrootcert=\S+other-ca\.crt: /,
    );
  });

  it('a service whose CA does not match stops at start with the TLS error, not a hang', async () => {
    const service = await startServiceProcess(
      'search',
      {
        ...serviceIdentities().env('search'),
        DATABASE_URL: withParams(dbUrl, `sslmode=verify-full&sslrootcert=${otherCa.certFile}`),
        NATS_URL: 'nats://127.0.0.1:1',
      },
      { waitReady: false },
    );
    expect(await service.exited).toMatchObject({ code: 1 });
    expect(service.logs().join('\n')).toMatch(
      /DatabaseTlsError: PostgreSQL TLS: the certificate of the server at 127\.0\.0\.1:\d+ was not verified with the CA in sslrootcert=\S+other-ca\.crt/,
    );
  });
});
