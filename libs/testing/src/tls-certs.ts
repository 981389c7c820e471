import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { run } from './exec';

export interface TestCa {
  certFile: string;
  keyFile: string;
}

export interface TestServerCertificate {
  certFile: string;
  keyFile: string;
}

const EC = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

/** A throwaway certificate authority (openssl, P-256, valid 2 days) in `dir`: `<name>.crt`, `<name>.key`. */
export async function createTestCa(dir: string, name = 'ca'): Promise<TestCa> {
  const certFile = path.join(dir, `${name}.crt`);
  const keyFile = path.join(dir, `${name}.key`);
  await run('openssl', [
    'req',
    '-x509',
    ...EC,
    '-days',
    '2',
    '-subj',
    `/CN=dam test ${name}`,
    '-keyout',
    keyFile,
    '-out',
    certFile,
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  return { certFile, keyFile };
}

/**
 * A server certificate signed by `ca` for `altNames` (`DNS:localhost`, `IP:127.0.0.1`, ...): what a database or
 * proxy presents. Files `<name>.crt`, `<name>.key` in `dir`.
 */
export async function issueServerCertificate(ca: TestCa, dir: string, name: string, altNames: string[]): Promise<TestServerCertificate> {
  const certFile = path.join(dir, `${name}.crt`);
  const keyFile = path.join(dir, `${name}.key`);
  const csr = path.join(dir, `${name}.csr`);
  const ext = path.join(dir, `${name}.ext`);
  await writeFile(ext, `subjectAltName=${altNames.join(',')}\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n`);
  await run('openssl', ['req', ...EC, '-subj', `/CN=${altNames[0]?.replace(/^\w+:/, '') ?? name}`, '-keyout', keyFile, '-out', csr]);
  await run('openssl', [
    'x509',
    '-req',
    '-in',
    csr,
    '-CA',
    ca.certFile,
    '-CAkey',
    ca.keyFile,
    '-CAcreateserial',
    '-days',
    '2',
    '-extfile',
    ext,
    '-out',
    certFile,
  ]);
  return { certFile, keyFile };
}
