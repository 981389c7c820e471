import type { NatsConnection } from '@nats-io/nats-core';
import { scaled, startNats, type TestNats } from '@dam/testing';
import {
  announceSettingsChanged,
  connectionWatch,
  connectNats,
  followSettingsChanges,
  settingsNoticeSubject,
  type NatsIdentity,
  type SettingsChangeFeed,
} from '../src';
import { until } from './helpers';

describe('settings notices (auth → the services that keep group settings)', () => {
  let server: TestNats;
  const open: NatsConnection[] = [];
  const feeds: SettingsChangeFeed[] = [];
  const as = async (identity: NatsIdentity) => {
    const nc = await connectNats(server.url, identity, server.seed(identity));
    open.push(nc);
    return nc;
  };
  /** A feed as `identity`, and every notice it heard (`*` for "any group"). */
  const follow = async (identity: NatsIdentity) => {
    const feed = followSettingsChanges(await as(identity));
    feeds.push(feed);
    const heard: string[] = [];
    feed.onChange((groupId) => heard.push(groupId ?? '*'));
    return { feed, heard };
  };

  beforeAll(async () => {
    server = await startNats();
  });
  afterAll(async () => {
    for (const feed of feeds) feed.close();
    for (const nc of open) await nc.close();
    await server.stop();
  });

  it('reaches every settings reader at once from auth, and from nobody else', async () => {
    const readers = await Promise.all((['metadata', 'conversion', 'transcode', 'webhook'] as const).map((identity) => follow(identity)));
    const auth = await as('auth');
    // The flush of the first notice makes sure every subscription is in place at the server.
    for (const r of readers) expect(r.feed.live()).toBe(true);
    await announceSettingsChanged(auth, 41);
    await until(() => readers.every((r) => r.heard.includes('41')), 5_000);
    // Another service cannot forge a notice (it would empty every cache at will): its publish is refused.
    const gateway = await as('gateway');
    gateway.publish(settingsNoticeSubject(42));
    await gateway.flush();
    await announceSettingsChanged(auth, 43);
    await until(() => readers.every((r) => r.heard.includes('43')), 5_000);
    for (const r of readers) expect(r.heard).toEqual(['41', '43']);
  });

  it(
    'is not live while NATS is down, and tells of "any group" when the connection goes and when it comes back',
    async () => {
      const { feed, heard } = await follow('conversion');
      const auth = await as('auth');
      await announceSettingsChanged(auth, 7);
      await until(() => heard.includes('7'), 5_000);
      await server.pause();
      await until(() => !feed.live(), 10_000);
      expect(heard).toEqual(['7', '*']);
      await server.resume();
      await until(() => feed.live(), 20_000);
      expect(heard).toEqual(['7', '*', '*']);
      // Subscribed again after the reconnection: the next notice arrives (auth's own connection waited for).
      await until(() => connectionWatch(auth).connected(), 20_000);
      await announceSettingsChanged(auth, 8);
      await until(() => heard.includes('8'), 5_000);
    },
    scaled(60_000),
  );
});
