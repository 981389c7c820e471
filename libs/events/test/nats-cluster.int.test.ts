import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { startNatsCluster, type TestNatsCluster } from '@dam/testing';
import {
  ASSET_EVENTS,
  assetEventSubject,
  connectNats,
  consume,
  DAM_INTERNAL,
  ensureStreams,
  FILE_SAVED,
  natsServers,
  openKvBucket,
  streamConfigs,
  type Consumer,
} from '../src';
import { fileSavedEvent } from './fixtures';
import { captureLogger, until } from './helpers';

describe('on a 3-node JetStream cluster', () => {
  let cluster: TestNatsCluster;
  let nc: NatsConnection;

  beforeAll(async () => {
    cluster = await startNatsCluster({ nodes: 3 });
    nc = await connectNats(cluster.url, 'events-test', cluster.seed('admin'));
  });
  afterAll(async () => {
    await nc?.close();
    await cluster?.stop();
  });

  it('takes NATS_URL as a comma-separated list of servers', () => {
    expect(cluster.url.split(',')).toHaveLength(3);
    expect(natsServers(` ${cluster.urls[0]} ,${cluster.urls[1]},, `)).toEqual([cluster.urls[0], cluster.urls[1]]);
  });

  it('creates the streams from several processes at once, then scales them to the configured replicas, saying so', async () => {
    const jsm = await jetstreamManager(nc);
    const others = await Promise.all([1, 2].map((i) => connectNats(cluster.urls[i] ?? '', `events-test-${i}`, cluster.seed('admin'))));
    try {
      // Several metadata replicas starting at once: each one creates or updates, none fails.
      const results = await Promise.all([nc, ...others].map((conn) => ensureStreams(conn, { replicas: 1 })));
      for (const r of results) expect(r.map((s) => [s.name, s.replicas])).toEqual(streamConfigs().map((c) => [c.name, 1]));
      expect(results.flat().filter((s) => s.action === 'created').length).toBeGreaterThanOrEqual(streamConfigs().length);

      // Scaled by all of them at once (a rolling update to NATS_STREAM_REPLICAS=3): an update sent while another one
      // scales the stream gets no answer until the stream has a leader again, which is waited out.
      const scaled = await Promise.all([nc, ...others].map((conn) => ensureStreams(conn, { replicas: 3 })));
      for (const r of scaled) expect(r.map((s) => [s.name, s.action, s.replicas])).toEqual(streamConfigs().map((c) => [c.name, 'updated', 3]));
      for (const c of streamConfigs()) expect(scaled.some((r) => r.some((s) => s.name === c.name && s.previousReplicas === 1))).toBe(true);
      for (const name of [ASSET_EVENTS, DAM_INTERNAL]) {
        expect((await jsm.streams.info(name)).config.num_replicas).toBe(3);
        // A leader and two followers once the new peers have caught up.
        await until(async () => {
          const { cluster: c } = await jsm.streams.info(name);
          return Boolean(c?.leader) && c?.replicas?.length === 2 && c.replicas.every((r) => r.current);
        }, 15_000);
      }

      // Several replicas of a service creating their durable at once.
      const consumers: Consumer[] = await Promise.all(
        [nc, ...others].map((conn) =>
          consume({
            nc: conn,
            stream: ASSET_EVENTS,
            durable: 'cluster-test',
            schema: FILE_SAVED.schema,
            logger: captureLogger(),
            handler: async () => undefined,
          }),
        ),
      );
      // A durable follows its stream's replicas.
      expect((await jsm.consumers.info(ASSET_EVENTS, 'cluster-test')).config.num_replicas ?? 0).toBe(0);
      await until(async () => (await jsm.consumers.info(ASSET_EVENTS, 'cluster-test')).cluster?.replicas?.length === 2, 15_000);
      await Promise.all(consumers.map((c) => c.stop()));
    } finally {
      await Promise.all(others.map((o) => o.close()));
    }
  });

  it('brings an existing KV bucket to the configured replicas, saying so, and keeps what it holds', async () => {
    const jsm = await jetstreamManager(nc);
    const scaled: Array<[number, number]> = [];
    const first = await openKvBucket(nc, 'SERVICE_TOKENS', { ttlMs: 70_000, conformTtl: true, replicas: 1, onScaled: (from, to) => scaled.push([from, to]) });
    await first.create('lock-1', 'held');
    expect(scaled).toEqual([]);
    // NATS_STREAM_REPLICAS raised to 3: the next start scales the bucket it finds.
    const again = await openKvBucket(nc, 'SERVICE_TOKENS', { ttlMs: 70_000, conformTtl: true, replicas: 3, onScaled: (from, to) => scaled.push([from, to]) });
    expect(scaled).toEqual([[1, 3]]);
    expect((await jsm.streams.info('KV_SERVICE_TOKENS')).config.num_replicas).toBe(3);
    await until(async () => (await jsm.streams.info('KV_SERVICE_TOKENS')).cluster?.replicas?.length === 2, 15_000);
    expect((await again.get('lock-1'))?.string()).toBe('held');
    // Already there: nothing to say.
    await openKvBucket(nc, 'SERVICE_TOKENS', { ttlMs: 70_000, conformTtl: true, replicas: 3, onScaled: (from, to) => scaled.push([from, to]) });
    expect(scaled).toEqual([[1, 3]]);
  });

  it('reconnects to another node when its server is killed, and publishes once a leader is elected', async () => {
    await ensureStreams(nc, { replicas: 3 });
    const own = cluster.nodes.find((n) => n.url.endsWith(`:${nc.info?.port}`));
    if (!own) throw new Error(`connected to none of ${cluster.url}`);
    const js = jetstream(nc);
    const subject = assetEventSubject('g1', 'file-saved');
    await own.kill();
    await until(() => nc.info?.port !== undefined && !own.url.endsWith(`:${nc.info.port}`), 15_000);
    await until(
      () =>
        js.publish(subject, JSON.stringify(fileSavedEvent()), { msgID: 'after-kill' }).then(
          () => true,
          () => false,
        ),
      20_000,
    );
    await own.restart();
    expect(nc.isClosed()).toBe(false);
    const again = await js.publish(subject, JSON.stringify(fileSavedEvent()), { msgID: 'after-kill' });
    expect(again.duplicate).toBe(true);
  });
});
