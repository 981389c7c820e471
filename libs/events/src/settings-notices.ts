import type { NatsConnection, Subscription } from '@nats-io/nats-core';
import { connectionWatch, natsCall } from './connection';
import { assertSubjectToken } from './subjects';

/**
 * auth → every service that keeps group settings: "this group's settings changed", `dam.notices.settings.<group_id>`,
 * an empty core NATS message. Outside every stream's subjects: a notice matters only to those listening now.
 */
export const SETTINGS_NOTICES_SUBJECTS = 'dam.notices.settings.*';
export const settingsNoticeSubject = (groupId: number | string): string => `dam.notices.settings.${assertSubjectToken(String(groupId), 'group id')}`;

/**
 * Announces a committed settings change and waits until the server has it (a flush): whoever reads the settings
 * after the caller's answer has the notice ahead of any later job command on its own connection. A connection
 * that is down is waited for briefly (natsCall), then the call fails.
 */
export async function announceSettingsChanged(nc: NatsConnection, groupId: number | string): Promise<void> {
  const subject = settingsNoticeSubject(groupId);
  await natsCall(nc, async () => {
    nc.publish(subject);
    await nc.flush();
  });
}

/** What a settings reader needs from the notices (GroupSettingsClient's `changes`). */
export interface SettingsChangeFeed {
  /** True while notices can arrive: subscribed and connected. A reader caches only then. */
  live(): boolean;
  /** `groupId` changed; without a group, any may have (the connection was down, notices may be lost). */
  onChange(listener: (groupId?: string) => void): void;
  close(): void;
}

/**
 * Follows auth's settings notices on `nc`. While the connection is down the feed is not live, and when it goes
 * down and again when it comes back every listener hears "any group" (notices sent meanwhile are lost).
 */
export function followSettingsChanges(nc: NatsConnection): SettingsChangeFeed {
  const watch = connectionWatch(nc);
  const listeners = new Set<(groupId?: string) => void>();
  const tell = (groupId?: string) => {
    for (const listener of listeners) listener(groupId);
  };
  let closed = false;
  const sub: Subscription = nc.subscribe(SETTINGS_NOTICES_SUBJECTS, {
    // An error closes the subscription (the feed is no longer live): whatever readers keep may be stale.
    callback: (error, msg) => tell(error ? undefined : msg.subject.split('.')[3]),
  });
  // Down, or back (notices sent meanwhile are lost): either way, any group.
  watch.onChange(() => {
    if (!closed) tell();
  });
  return {
    live: () => watch.connected() && !closed && !sub.isClosed(),
    onChange: (listener) => void listeners.add(listener),
    close() {
      closed = true;
      sub.unsubscribe();
      tell();
    },
  };
}
