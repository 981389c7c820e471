import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { nkeyAuthenticator, type NatsConnection } from '@nats-io/nats-core';
import { connect } from '@nats-io/transport-node';
import { freePort, scaled } from '@dam/testing';
import { connectNats, DEFAULT_SUBSCRIBERS, generateNatsUsers, renderNatsAuthorization, type NatsUser } from '../src';
import { until } from './helpers';

/**
 * Production form D5 (issue 31), the NATS side of an upgrade: a server whose `authorization` block is included from a
 * file (the Secret dam-nats-auth, mounted as the kubelet mounts Secrets: `auth.conf` → `..data/auth.conf`, the
 * `..data` link swapped atomically on a change) takes a re-rendered block on a reload signal (SIGHUP, what
 * `nats-server --signal reload=<pid file>` and the config-reloader sidecar send), without a restart: a new user
 * connects, and a connection made before gets the permission it lacked without reconnecting. A broken block is
 * refused and the running configuration stays.
 */
describe('nats-server reloads a re-rendered dam-nats-auth', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'dam-nats-reload-'));
  const authDir = path.join(dir, 'auth');
  const pidFile = path.join(dir, 'nats.pid');
  const users = generateNatsUsers([...DEFAULT_SUBSCRIBERS, 'subscriber-crm']);
  const seedOf = (identity: string) => (users.find((u) => u.identity === identity) as NatsUser).seed;
  let server: ChildProcess;
  let log = '';
  let url = '';
  let version = 0;
  const opened: NatsConnection[] = [];

  /** As the kubelet updates a mounted Secret: a new timestamped folder, then `..data` swapped to it in one rename. */
  const mountAuth = (conf: string): void => {
    version += 1;
    const folder = `..v${version}`;
    mkdirSync(path.join(authDir, folder), { recursive: true });
    writeFileSync(path.join(authDir, folder, 'auth.conf'), conf);
    symlinkSync(folder, path.join(authDir, '..data_tmp'));
    renameSync(path.join(authDir, '..data_tmp'), path.join(authDir, '..data'));
  };
  const reload = (): void => {
    const r = spawnSync('nats-server', ['--signal', `reload=${pidFile}`], { encoding: 'utf8' });
    expect([r.status, r.stderr]).toEqual([0, '']);
  };
  const connectAs = async (identity: string): Promise<NatsConnection> => {
    const nc = await connect({
      servers: url,
      reconnect: false,
      authenticator: nkeyAuthenticator(new TextEncoder().encode(seedOf(identity))),
      timeout: scaled(2000),
    });
    opened.push(nc);
    return nc;
  };
  /** The JetStream account check, the first request every service makes: allowed or not by its permissions. */
  const jsInfo = (nc: NatsConnection) =>
    nc.request('$JS.API.INFO', '', { timeout: scaled(2000) }).then(
      () => 'allowed',
      (error: unknown) => String(error),
    );

  beforeAll(async () => {
    const port = await freePort();
    // The release before: no subscriber-crm, and metadata without the JetStream account check (a permission a new
    // release needs).
    const before = renderNatsAuthorization(users.filter((u) => u.identity !== 'subscriber-crm'));
    const metadataLine = before.split('\n').findIndex((l) => l.includes('# metadata'));
    const lines = before.split('\n');
    lines[metadataLine + 1] = (lines[metadataLine + 1] as string).replace('"$JS.API.INFO", ', '');
    expect(lines.join('\n')).not.toBe(before);
    mountAuth(lines.join('\n'));
    symlinkSync('..data/auth.conf', path.join(authDir, 'auth.conf'));
    writeFileSync(
      path.join(dir, 'nats.conf'),
      `listen: 127.0.0.1:${port}\npid_file: ${JSON.stringify(pidFile)}\njetstream { store_dir: ${JSON.stringify(path.join(dir, 'js'))} }\ninclude ./auth/auth.conf\n`,
    );
    server = spawn('nats-server', ['-c', path.join(dir, 'nats.conf')], { stdio: ['ignore', 'ignore', 'pipe'] });
    server.stderr?.on('data', (chunk: Buffer) => (log += chunk.toString()));
    url = `nats://127.0.0.1:${port}`;
    await until(
      () =>
        connectAs('admin').then(
          () => true,
          () => false,
        ),
      15_000,
    );
  });
  afterAll(async () => {
    await Promise.all(opened.map((nc) => nc.close().catch(() => undefined)));
    server.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  });

  it('lets a new user in and gives a connected service its new permission, on a reload, without a restart', async () => {
    const metadata = await connectNats(url, 'metadata', seedOf('metadata'));
    opened.push(metadata);
    const statuses: string[] = [];
    void (async () => {
      for await (const s of metadata.status()) statuses.push(s.type);
    })();
    expect(await jsInfo(metadata)).toMatch(/permission/i);
    await expect(connectAs('subscriber-crm')).rejects.toThrow(/authorization/i);
    const pid = server.pid;

    mountAuth(renderNatsAuthorization(users));
    reload();

    await until(
      () =>
        connectAs('subscriber-crm').then(
          () => true,
          () => false,
        ),
      10_000,
    );
    expect(await jsInfo(metadata)).toBe('allowed');
    // The same connection, never dropped; the same server process.
    expect([statuses.filter((s) => s === 'disconnect' || s === 'reconnect'), metadata.isClosed(), server.pid, server.exitCode]).toEqual([[], false, pid, null]);
    expect(log).toMatch(/Reloaded: authorization users/);
  });

  it('refuses a broken authorization block and keeps serving with the one it has', async () => {
    const admin = await connectAs('admin');
    mountAuth('authorization { users = [ { nkey: "not-a-key" } ] }\n');
    reload();
    await until(() => /Failed to reload server configuration: .*auth\.conf/.test(log), 10_000);
    expect(await connectAs('subscriber-crm').then(() => 'connected')).toBe('connected');
    expect([admin.isClosed(), server.exitCode]).toEqual([false, null]);
  });
});
