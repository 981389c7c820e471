/**
 * Production form D5 (issue 31): the NATS pods' auth reloader (deploy/k8s/nats-reloader.ts) run against a real
 * nats-server whose authorization is included from a Secret-style mount (auth.conf → ..data/auth.conf, the link swapped
 * in one rename as the kubelet does): no signal while nothing changed, one reload when `k8s:secrets --existing`
 * re-rendered dam-nats-auth for a new subscriber, and a broken block refused by the server, which keeps running.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import { DEFAULT_SUBSCRIBERS } from '@dam/events';
import { scaled } from '../../libs/testing/src/time-scale';
import { natsAuthReloaderContainer, natsAuthReloaderScript } from '../k8s/nats-reloader';
import { generateSecrets, parseExistingSecrets } from '../k8s/secrets';

jest.setTimeout(scaled(30_000));

const until = async (what: string, check: () => boolean, ms = 10_000): Promise<void> => {
  const deadline = Date.now() + scaled(ms);
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`not reached in time: ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
};

describe('the NATS auth reloader sidecar', () => {
  it('signals a reload when the mounted dam-nats-auth changes, and only then', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dam-nats-reloader-'));
    const authDir = path.join(dir, 'auth');
    const pidFile = path.join(dir, 'nats.pid');
    let version = 0;
    const mountAuth = (conf: string): void => {
      version += 1;
      mkdirSync(path.join(authDir, `..v${version}`), { recursive: true });
      writeFileSync(path.join(authDir, `..v${version}`, 'auth.conf'), conf);
      symlinkSync(`..v${version}`, path.join(authDir, '..data_tmp'));
      renameSync(path.join(authDir, '..data_tmp'), path.join(authDir, '..data'));
    };
    const installed = generateSecrets();
    const authOf = (secrets: ReturnType<typeof generateSecrets>) => secrets.find((s) => s.metadata.name === 'dam-nats-auth')?.stringData['auth.conf'] as string;
    mountAuth(authOf(installed));
    symlinkSync('..data/auth.conf', path.join(authDir, 'auth.conf'));
    writeFileSync(path.join(dir, 'nats.conf'), `listen: 127.0.0.1:-1\npid_file: ${JSON.stringify(pidFile)}\ninclude ./auth/auth.conf\n`);

    let serverLog = '';
    let sidecarLog = '';
    const children: ChildProcess[] = [];
    try {
      const server = spawn('nats-server', ['-c', path.join(dir, 'nats.conf')], { stdio: ['ignore', 'ignore', 'pipe'] });
      children.push(server);
      server.stderr?.on('data', (c: Buffer) => (serverLog += c.toString()));
      await until('nats-server ready', () => serverLog.includes('Server is ready'));
      const sidecar = spawn('/bin/sh', ['-c', natsAuthReloaderScript(path.join(authDir, 'auth.conf'), pidFile, '0.1')], { stdio: ['ignore', 'pipe', 'pipe'] });
      children.push(sidecar);
      sidecar.stdout?.on('data', (c: Buffer) => (sidecarLog += c.toString()));
      sidecar.stderr?.on('data', (c: Buffer) => (sidecarLog += c.toString()));
      await until('sidecar watching', () => sidecarLog.includes('watching'));
      const reloads = () => serverLog.split('Reloaded server configuration').length - 1;

      // Unchanged: ten polls and more, no signal.
      await new Promise((r) => setTimeout(r, 1500));
      expect([reloads(), sidecarLog]).toEqual([0, expect.not.stringContaining('reload signalled')]);

      // An upgrade: the re-rendered Secret (a new subscriber), swapped in by the kubelet.
      const existing = parseExistingSecrets(installed.map((o) => stringify(o)).join('---\n'));
      mountAuth(authOf(generateSecrets({ existing, subscribers: [...DEFAULT_SUBSCRIBERS, 'subscriber-crm'] })));
      await until('one reload', () => reloads() === 1 && serverLog.includes('Reloaded: authorization users'));
      await new Promise((r) => setTimeout(r, 1000));
      expect(reloads()).toBe(1);

      // A broken block: signalled, refused by the server, which keeps running with the one it has.
      mountAuth('authorization { users = [ { nkey: "not-a-key" } ] }\n');
      await until('refused', () => /Failed to reload server configuration/.test(serverLog));
      expect([server.exitCode, reloads()]).toEqual([null, 1]);
    } finally {
      for (const c of children) c.kill('SIGTERM');
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('is a container Kubernetes leaves as written: no $(NAME) or $$ in its command, both mounts read-only', () => {
    const c = natsAuthReloaderContainer({ image: 'nats:2.10.22-alpine', volumes: { auth: 'auth', run: 'run' }, resources: {}, securityContext: {} }) as {
      command: string[];
      volumeMounts: Array<{ name: string; mountPath: string; readOnly: boolean }>;
    };
    const script = c.command.join(' ');
    expect([/\$\([A-Za-z_][A-Za-z0-9_]*\)/.test(script), script.includes('$$')]).toEqual([false, false]);
    expect(c.volumeMounts).toEqual([
      { name: 'auth', mountPath: '/etc/nats/auth', readOnly: true },
      { name: 'run', mountPath: '/var/run/nats', readOnly: true },
    ]);
    // It survives YAML as the manifests carry it.
    expect(parseAllDocuments(stringify(c))[0]?.toJSON()).toEqual(c);
  });
});
