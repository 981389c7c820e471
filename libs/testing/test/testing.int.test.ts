import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { connect, nkeyAuthenticator } from '@nats-io/transport-node';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { Client } from 'pg';
import {
  createBucket,
  createDatabase,
  freePort,
  s3Env,
  startNats,
  startNatsCluster,
  startServiceProcess,
  testMinioClient,
  testS3Config,
  httpOk,
  repoRoot,
  scaled,
  waitFor,
  type TestNats,
  type TestNatsCluster,
} from '../src';

// Servers start for real here; the per-project testTimeout in jest.config.js does not apply (jest reads it globally).
jest.setTimeout(scaled(60_000));

const fixture = path.join(__dirname, 'fixtures', 'fake-service.fixture.ts');

describe('startNats', () => {
  let nats: TestNats;
  beforeAll(async () => {
    nats = await startNats();
  });
  afterAll(async () => {
    await nats.stop();
  });

  it("refuses anonymous clients: the suite's identities only", async () => {
    await expect(connect({ servers: nats.url, reconnect: false })).rejects.toThrow(/Authorization/i);
  });

  it('runs JetStream: a stream takes a message and gives it back', async () => {
    const nc = await connect({ servers: nats.url, authenticator: nkeyAuthenticator(new TextEncoder().encode(nats.seed('admin'))) });
    try {
      const jsm = await jetstreamManager(nc);
      await jsm.streams.add({ name: 'T', subjects: ['t.>'] });
      const ack = await jetstream(nc).publish('t.one', 'hello', { msgID: 'm1' });
      expect(ack.seq).toBe(1);
      const dup = await jetstream(nc).publish('t.one', 'hello', { msgID: 'm1' });
      expect(dup.duplicate).toBe(true);
      const stored = await jsm.streams.getMessage('T', { seq: 1 });
      expect(stored?.string()).toBe('hello');
      expect(stored?.subject).toBe('t.one');
    } finally {
      await nc.close();
    }
  });

  it('stops the server', async () => {
    const other = await startNats();
    await other.stop();
    await expect(connect({ servers: other.url, reconnect: false, timeout: 1000 })).rejects.toThrow();
  });
});

describe('startNatsCluster', () => {
  let cluster: TestNatsCluster;
  beforeAll(async () => {
    cluster = await startNatsCluster({ nodes: 3 });
  });
  afterAll(async () => {
    await cluster.stop();
  });

  it("forms a JetStream cluster with routes between its nodes and the suite's identities only", async () => {
    expect(cluster.url).toBe(cluster.nodes.map((n) => n.url).join(','));
    for (const node of cluster.nodes) {
      const routez = (await (await fetch(`${node.monitorUrl}/routez`)).json()) as { num_routes: number };
      expect(routez.num_routes).toBe(2);
    }
    expect(cluster.nodes.map((n) => n.name)).toContain((await cluster.metaLeader()).name);
    await expect(connect({ servers: cluster.urls, reconnect: false })).rejects.toThrow(/Authorization/i);
  });

  it('kills a node and restarts it on the same port with the same store', async () => {
    const nc = await connect({ servers: cluster.urls, authenticator: nkeyAuthenticator(new TextEncoder().encode(cluster.seed('admin'))) });
    try {
      const jsm = await jetstreamManager(nc);
      await jsm.streams.add({ name: 'R3', subjects: ['r3.>'], num_replicas: 3 });
      await waitFor(async () => (await jsm.streams.info('R3')).cluster?.leader, { timeoutMs: 10_000 });
      await jetstream(nc).publish('r3.one', 'kept');
      const node = cluster.node('n2');
      await node.kill();
      expect(node.running()).toBe(false);
      expect(await httpOk(`${node.monitorUrl}/healthz`)).toBe(false);
      await node.restart();
      expect(node.running()).toBe(true);
      // The restarted server found the stream in its own store folder, and holds the message (it may have been the
      // replica outside the quorum that acknowledged it: then it catches up from the others).
      const jsz = await waitFor(
        async () => {
          const j = (await (await fetch(`${node.monitorUrl}/jsz?streams=true`)).json()) as { streams: number; messages: number };
          return j.messages === 1 ? j : undefined;
        },
        { timeoutMs: 10_000, description: 'the restarted node to hold the message' },
      );
      expect(jsz).toMatchObject({ streams: 1, messages: 1 });
    } finally {
      await nc.close();
    }
  });
});

describe('createDatabase', () => {
  it('creates a fresh usable database each call', async () => {
    const a = await createDatabase('lib_testing');
    const b = await createDatabase('lib_testing');
    expect(a).not.toBe(b);
    const client = new Client({ connectionString: a });
    await client.connect();
    try {
      await client.query('CREATE TABLE t (id int primary key, v text)');
      await client.query("INSERT INTO t VALUES (1, 'x')");
      const { rows } = await client.query<{ v: string; db: string }>('SELECT v, current_database() AS db FROM t');
      expect(rows).toEqual([{ v: 'x', db: new URL(a).pathname.slice(1) }]);
    } finally {
      await client.end();
    }
  });
});

describe('createBucket', () => {
  it('creates a bucket in which an object round-trips', async () => {
    const bucket = await createBucket('lib-testing');
    const s3 = testMinioClient();
    expect(await s3.bucketExists(bucket)).toBe(true);
    await s3.putObject(bucket, 'a/b.txt', Buffer.from('round trip'));
    const chunks: Buffer[] = [];
    for await (const chunk of await s3.getObject(bucket, 'a/b.txt')) chunks.push(chunk as Buffer);
    expect(Buffer.concat(chunks).toString()).toBe('round trip');
    expect(testS3Config(bucket)).toMatchObject({ bucket, region: 'us-east-1' });
    expect(s3Env(bucket)).toMatchObject({ S3_BUCKET: bucket, S3_ENDPOINT: process.env.DAM_TEST_S3_ENDPOINT });
  });
});

describe('startServiceProcess', () => {
  it('waits for /readyz, passes env and PORT, captures logs and stops with SIGTERM', async () => {
    const svc = await startServiceProcess('fake', { GREETING: 'hi', READY_AFTER_MS: '500' }, { entry: fixture });
    try {
      const body = (await (await fetch(`${svc.url}/readyz`)).json()) as { status: string; greeting: string };
      expect(body).toEqual({ status: 'ok', greeting: 'hi' });
      expect(await svc.waitForLog(/listening on \d+/)).toBe(`listening on ${svc.port}`);
    } finally {
      await svc.stop();
    }
    expect(svc.logs()).toContain('draining');
    expect(await svc.exited).toEqual({ code: 0, signal: null });
  });

  it('fails fast with the log tail when the service exits before ready', async () => {
    const started = Date.now();
    await expect(startServiceProcess('fake', { FAIL_AT_START: '1' }, { entry: fixture })).rejects.toThrow(
      /exited before ready \(code 3.*\n.*config error: FAIL_AT_START/s,
    );
    // Starting node and tsx takes a few seconds on a slow machine; waiting out the (30 s) readiness limit fails.
    expect(Date.now() - started).toBeLessThan(scaled(10_000));
  });

  it('kill(SIGKILL) ends the process at once', async () => {
    const svc = await startServiceProcess('fake', {}, { entry: fixture });
    svc.kill('SIGKILL');
    expect(await svc.exited).toEqual({ code: null, signal: 'SIGKILL' });
    expect(svc.logs()).not.toContain('draining');
  });

  it('rejects a service that does not exist', async () => {
    await expect(startServiceProcess('no-such-service', {})).rejects.toThrow(/does not exist/);
  });
});

describe('helpers', () => {
  it('freePort gives distinct usable ports and waitFor times out with a message', async () => {
    const [a, b] = await Promise.all([freePort(), freePort()]);
    expect(a).toBeGreaterThan(0);
    expect(a).not.toBe(b);
    await expect(waitFor(() => false, { timeoutMs: 200, intervalMs: 50, description: 'never' })).rejects.toThrow(/never not met/);
    let n = 0;
    expect(await waitFor(() => (++n >= 3 ? n : undefined), { intervalMs: 10 })).toBe(3);
  });
});

describe('a test process killed without cleanup', () => {
  it('takes its NATS server and service processes with it', async () => {
    const parent = spawn(process.execPath, ['--import', 'tsx', path.join(__dirname, 'fixtures', 'orphan-parent.fixture.ts')], {
      cwd: repoRoot,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const line = await new Promise<string>((resolve, reject) => {
      createInterface({ input: parent.stdout! }).once('line', resolve);
      parent.once('exit', (code) => reject(new Error(`fixture exited with ${code}`)));
    });
    const started = JSON.parse(line) as { monitorUrl: string; serviceUrl: string; servicePid: number };
    expect(await httpOk(`${started.monitorUrl}/healthz`)).toBe(true);
    expect(await httpOk(`${started.serviceUrl}/readyz`)).toBe(true);

    parent.kill('SIGKILL');
    await waitFor(async () => !(await httpOk(`${started.monitorUrl}/healthz`)), { timeoutMs: 10_000, description: 'nats gone' });
    await waitFor(async () => !(await httpOk(`${started.serviceUrl}/readyz`)), { timeoutMs: 10_000, description: 'service gone' });
    // Gone, or a zombie waiting for a reaper (PID 1 in a container may never reap it).
    const state = (() => {
      try {
        return /State:\s+(\S)/.exec(readFileSync(`/proc/${started.servicePid}/status`, 'utf8'))?.[1];
      } catch {
        return 'gone';
      }
    })();
    expect(['gone', 'Z']).toContain(state);
  });
});
