import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseSigningKey, parseTrustedKeys } from '@dam/auth-tokens';
import { publicKeyOfSeed } from '@dam/events';
import { freePort, repoRoot, scaled, waitFor } from '@dam/testing';

const mode = (file: string): string => (statSync(file).mode & 0o777).toString(8);

/** Runs `snippet` after sourcing deploy/local/env.sh with a data folder of our own. */
function withEnv(dataDir: string, snippet: string): string {
  return execFileSync('bash', ['-c', `. deploy/local/env.sh && ${snippet}`], {
    cwd: repoRoot,
    env: { ...process.env, DAM_DATA_DIR: dataDir },
    encoding: 'utf8',
  });
}

describe('deploy/local secrets and logs', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'dam-local-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('creates secrets readable by their owner only, and a key per service that the verifiers trust', () => {
    const out = withEnv(dir, 'dam_secrets && dam_service_key upload');
    expect(mode(path.join(dir, 'secrets.env'))).toBe('600');
    expect(mode(path.join(dir, 'secrets'))).toBe('700');
    expect(mode(path.join(dir, 'secrets', 'service-keys.json'))).toBe('600');
    expect(mode(path.join(dir, 'secrets', 'service-keys.env'))).toBe('600');
    expect(parseSigningKey(out.trim(), 'upload').service).toBe('upload');
    const trusted = withEnv(dir, 'dam_secrets && printf %s "$SERVICE_TRUSTED_KEYS"');
    const services = new Set([...parseTrustedKeys(trusted).values()].map((k) => k.service));
    expect([...services].sort()).toEqual(['addon', 'auth', 'conversion', 'gateway', 'link-signing', 'metadata', 'search', 'transcode', 'upload', 'webhook']);
    // Kept across runs: tokens and keys survive a restart.
    expect(withEnv(dir, 'dam_secrets && dam_service_key upload')).toBe(out);
    expect(readFileSync(path.join(dir, 'secrets.env'), 'utf8')).toMatch(/^JWT_SECRET=[0-9a-f]{64}\nLINK_SIGNING_KEYS=[0-9a-f]{64}\n$/);
  });

  it('creates a NATS user per identity: the server config holds public keys only, the seeds stay 0600', () => {
    const seed = withEnv(dir, 'dam_nats_users && dam_nats_seed conversion').trim();
    expect(seed).toMatch(/^SU[A-Z2-7]{56}$/);
    expect(withEnv(dir, 'dam_nats_users && dam_nats_seed no-such-service').trim()).toBe(''); // no NATS identity
    const conf = readFileSync(path.join(dir, 'secrets', 'nats-auth.conf'), 'utf8');
    expect(conf).toContain(publicKeyOfSeed(seed));
    expect(conf).not.toMatch(/SU[A-Z2-7]{56}/);
    expect(conf).not.toMatch(/no_auth_user|password/);
    for (const f of ['nats-auth.conf', 'nats-users.env', 'nats-users.json']) expect(mode(path.join(dir, 'secrets', f))).toBe('600');
    // Kept across runs: services keep their identity.
    expect(withEnv(dir, 'dam_nats_users && dam_nats_seed conversion').trim()).toBe(seed);
  });

  it('tightens a secrets file and logs that were created world-readable', () => {
    writeFileSync(path.join(dir, 'secrets.env'), 'JWT_SECRET=0123456789abcdef0123\n', { mode: 0o644 });
    withEnv(dir, 'dam_secrets');
    expect(mode(path.join(dir, 'secrets.env'))).toBe('600');
    execFileSync('bash', ['-c', `mkdir -p "${dir}/logs" && umask 022 && touch "${dir}/logs/auth.log"`]);
    withEnv(dir, 'dam_prepare_logs');
    expect(mode(path.join(dir, 'logs'))).toBe('700');
    expect(mode(path.join(dir, 'logs', 'auth.log'))).toBe('600');
    expect(mode(path.join(dir, 'logs', 'gateway.log'))).toBe('600');
  });
});

describe('deploy/infra/nats.sh', () => {
  it('keeps JetStream running when a second start reloads the configuration', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dam-nats-'));
    const [port, monitor] = [await freePort(), await freePort()];
    const conf = path.join(dir, 'auth.conf');
    writeFileSync(conf, 'authorization { users = [ { user: a, password: b } ] }\n');
    const nats = (cmd: string) =>
      execFileSync(path.join(repoRoot, 'deploy/infra/nats.sh'), [cmd, path.join(dir, 'nats'), String(port), String(monitor), conf], { encoding: 'utf8' });
    const jetStream = async () => (await (await fetch(`http://127.0.0.1:${monitor}/jsz`)).json()) as { disabled?: boolean; config?: { store_dir?: string } };
    try {
      expect(nats('start')).toContain('NATS ready');
      expect(await jetStream()).toMatchObject({ config: { store_dir: expect.stringContaining(path.join(dir, 'nats', 'jetstream')) } });
      expect((await jetStream()).disabled).toBeUndefined();
      // A changed authorization (a new identity) is applied by a reload: JetStream must survive it.
      writeFileSync(conf, 'authorization { users = [ { user: a, password: c } ] }\n');
      expect(nats('start')).toContain('NATS already running');
      expect((await jetStream()).disabled).toBeUndefined();
      expect(readFileSync(path.join(dir, 'nats', 'nats.log'), 'utf8')).toContain('Reloaded: authorization users');
    } finally {
      nats('stop');
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it(
    "starts PostgreSQL again after a SIGKILL, also when the dead postmaster's pid now names another process",
    async () => {
      const dir = mkdtempSync(path.join(os.tmpdir(), 'dam-pg-'));
      execFileSync('chmod', ['755', dir]);
      const port = await freePort();
      const pg = (cmd: string) =>
        execFileSync(path.join(repoRoot, 'deploy/infra/postgres.sh'), [cmd, path.join(dir, 'pg'), String(port)], { encoding: 'utf8' });
      const pidFile = path.join(dir, 'pg', 'postmaster.pid');
      const answers = () => execFileSync('psql', ['-h', '127.0.0.1', '-p', String(port), '-U', 'postgres', '-tAc', 'SELECT 42'], { encoding: 'utf8' }).trim();
      // Another process of the same user (postgres when run as root, as deploy/infra runs the server): pg_ctl and the
      // server can signal it, so they take it for a running postmaster.
      const asPostgres = process.getuid?.() === 0;
      const other = asPostgres
        ? spawn('setpriv', ['--reuid=postgres', '--regid=postgres', '--clear-groups', 'sleep', '600'], { stdio: 'ignore' })
        : spawn('sleep', ['600'], { stdio: 'ignore' });
      try {
        expect(pg('start')).toContain('PostgreSQL ready');
        expect(pg('start')).toContain('PostgreSQL already running');
        const postmaster = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
        process.kill(postmaster, 'SIGKILL');
        await waitFor(
          async () => execFileSync('bash', ['-c', `kill -0 ${postmaster} 2>/dev/null && echo alive || echo gone`], { encoding: 'utf8' }).trim() === 'gone',
          { description: 'the postmaster gone' },
        );
        // Its children notice and leave; the lock file stays, naming a pid that now belongs to another process.
        const lines = readFileSync(pidFile, 'utf8').split('\n');
        lines[0] = String(other.pid);
        writeFileSync(pidFile, lines.join('\n'));
        await waitFor(async () => !execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' }).includes(`-D ${path.join(dir, 'pg')}`), {
          timeoutMs: 15_000,
          description: 'the old backends gone',
        });
        const out = pg('start');
        expect(out).toContain('removing the stale');
        expect(out).toContain('PostgreSQL ready');
        expect(answers()).toBe('42');
      } finally {
        other.kill();
        pg('stop');
        rmSync(dir, { recursive: true, force: true });
      }
    },
    scaled(60_000),
  );
});
