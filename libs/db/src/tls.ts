import { readFileSync } from 'node:fs';
import { types } from 'node:util';
import { Client } from 'pg';

/**
 * Database TLS comes from DATABASE_URL alone, as node-postgres 8 reads it (pg-connection-string):
 * - `sslmode=verify-full&sslrootcert=/etc/dam/db-ca/ca.crt`: the server's certificate must chain to that CA and name
 *   the URL's host. Without `sslrootcert`, Node's trusted CAs (and NODE_EXTRA_CA_CERTS) are used.
 * - `sslmode=require` (and `prefer`, `verify-ca`) verify exactly like `verify-full` in node-postgres 8; pg 9 will give
 *   them libpq's weaker meaning, so the documented form is `verify-full`.
 * - `uselibpqcompat=true` switches to libpq's meanings: `require` encrypts without verifying anything (with an
 *   `sslrootcert`: the chain, not the host), `verify-ca` the chain only, `verify-full` both.
 * - `sslmode=disable` (or none): plain TCP.
 * These helpers only make the failures of that say what is wrong: a CA file that cannot be read stops createPool,
 * and a handshake that fails names TLS, the host and the CA instead of "self-signed certificate in certificate chain".
 */
export interface TlsSettings {
  host: string;
  port: string;
  sslmode?: string;
  sslrootcert?: string;
  /** A client certificate and its key (certificate authentication), when the URL names them. */
  sslcert?: string;
  sslkey?: string;
  libpqCompat: boolean;
}

/** Thrown when TLS to PostgreSQL cannot work as configured; the original error is its cause. */
export class DatabaseTlsError extends Error {
  constructor(message: string, cause: unknown) {
    super(message, { cause });
    this.name = 'DatabaseTlsError';
  }
}

export function tlsSettingsOf(connectionString: string): TlsSettings {
  let url: URL | undefined;
  try {
    url = new URL(connectionString);
  } catch {
    url = undefined;
  }
  const param = (name: string): string | undefined => url?.searchParams.get(name) ?? undefined;
  return {
    host: param('host') ?? (url?.hostname ? decodeURIComponent(url.hostname) : 'localhost'),
    port: param('port') ?? (url?.port || '5432'),
    sslmode: param('sslmode'),
    sslrootcert: param('sslrootcert'),
    sslcert: param('sslcert'),
    sslkey: param('sslkey'),
    libpqCompat: param('uselibpqcompat') === 'true',
  };
}

/**
 * A CA file (or client certificate or key) that is missing, or a CA file that holds no certificate, is a configuration
 * error: it stops the start here, not at the first query.
 */
export function checkRootCert(settings: TlsSettings): void {
  for (const [param, file] of [
    ['sslrootcert', settings.sslrootcert],
    ['sslcert', settings.sslcert],
    ['sslkey', settings.sslkey],
  ] as const) {
    if (!file) continue;
    let pem: string;
    try {
      pem = readFileSync(file, 'utf8');
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
      const what = param === 'sslrootcert' ? "mount the CA that signed the database server's certificate there" : 'mount the client certificate and key there';
      throw new DatabaseTlsError(`PostgreSQL TLS: the file ${param}=${file} in DATABASE_URL cannot be read (${code}); ${what}`, err);
    }
    if (param === 'sslrootcert' && !pem.includes('-----BEGIN CERTIFICATE-----')) {
      throw new DatabaseTlsError(
        `PostgreSQL TLS: the CA file sslrootcert=${file} in DATABASE_URL holds no PEM certificate (-----BEGIN CERTIFICATE-----)`,
        undefined,
      );
    }
  }
}

const ALTNAME = 'ERR_TLS_CERT_ALTNAME_INVALID';
/** OpenSSL's verification failures (Node gives them as the error's code), then Node's other TLS/SSL errors. */
const NOT_VERIFIED = /CERT|SELF_SIGNED|UNABLE_TO_|INVALID_CA/;
const HANDSHAKE = /^ERR_TLS_|^ERR_SSL_/;
const NO_SSL = /does not support SSL connections/;

function caText(s: TlsSettings): string {
  if (s.sslrootcert) return `the CA in sslrootcert=${s.sslrootcert}`;
  const extra = process.env.NODE_EXTRA_CA_CERTS;
  return `Node.js's trusted CAs (DATABASE_URL names no sslrootcert; NODE_EXTRA_CA_CERTS ${extra ? `is ${extra}` : 'is not set'})`;
}

function modeText(s: TlsSettings): string {
  const mode = s.sslmode ?? '(none)';
  if (!s.libpqCompat && (mode === 'require' || mode === 'prefer' || mode === 'verify-ca')) {
    return `sslmode=${mode}, which node-postgres 8 verifies as verify-full`;
  }
  return `sslmode=${mode}${s.libpqCompat ? ', uselibpqcompat=true' : ''}`;
}

/** The error a failed connection ends with: TLS failures described, everything else as it was. */
export function describeConnectError(err: unknown, s: TlsSettings): unknown {
  // Node's own errors are not instances of another realm's Error (jest's): recognised by their kind, not the class.
  if (!(err instanceof Error || types.isNativeError(err)) || err instanceof DatabaseTlsError) return err;
  const raw = (err as Error & { code?: unknown }).code;
  const code = typeof raw === 'string' ? raw : '';
  const server = `${s.host}:${s.port}`;
  if (code === ALTNAME) {
    return new DatabaseTlsError(
      `PostgreSQL TLS: the certificate of the server at ${server} does not name the host "${s.host}" of DATABASE_URL (${err.message}); ` +
        `connect with a host name the certificate carries (${modeText(s)}; CA: ${caText(s)})`,
      err,
    );
  }
  if (NO_SSL.test(err.message)) {
    return new DatabaseTlsError(
      `PostgreSQL TLS: the server at ${server} does not accept TLS connections (${modeText(s)}); turn ssl on in the server, or connect through a pooler or proxy that does`,
      err,
    );
  }
  if (NOT_VERIFIED.test(code)) {
    return new DatabaseTlsError(
      `PostgreSQL TLS: the certificate of the server at ${server} was not verified with ${caText(s)}: ${err.message} (${code}; ${modeText(s)}); ` +
        'mount the CA that signed the database server\'s certificate and name it in sslrootcert (docs/operations.md, "Database TLS")',
      err,
    );
  }
  if (HANDSHAKE.test(code)) {
    return new DatabaseTlsError(
      `PostgreSQL TLS: the handshake with the server at ${server} failed: ${err.message} (${code}; ${modeText(s)}; CA: ${caText(s)})`,
      err,
    );
  }
  return err;
}

/** pg's Client, its connect() failures described (the Pool creates every connection through it). */
export function describingClient(settings: TlsSettings): typeof Client {
  return class DescribingClient extends Client {
    override connect(): Promise<Client>;
    override connect(callback: (err: Error) => void): void;
    override connect(callback?: (err: Error, client?: Client) => void): Promise<Client> | void {
      if (callback) {
        super.connect(((err: Error | null, client?: Client) => callback((err ? describeConnectError(err, settings) : err) as Error, client)) as (
          err: Error,
        ) => void);
        return;
      }
      return super.connect().then(
        () => this,
        (err: unknown) => Promise.reject(describeConnectError(err, settings)),
      );
    }
  };
}
