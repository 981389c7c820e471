import type { NatsConnection, Subscription } from '@nats-io/nats-core';
import { natsCall } from './connection';
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
  const listeners = new Set<(groupId?: string) => void>();
  const tell = (groupId?: string) => {
    for (const listener of listeners) listener(groupId);
  };
  let up = !nc.isClosed();
  let closed = false;
  const sub: Subscription = nc.subscribe(SETTINGS_NOTICES_SUBJECTS, {
    callback: (error, msg) => {
      if (error) {
        up = false;
        tell();
        return;
      }
      tell(msg.subject.split('.')[3]);
    },
  });
  void (async () => {
    for await (const status of nc.status()) {
      if (closed) break;
      if (status.type === 'disconnect' || status.type === 'staleConnection' || status.type === 'forceReconnect') {
        up = false;
        tell();
      } else if (status.type === 'reconnect') {
        tell();
        up = true;
      }
    }
  })().catch(() => undefined);
  void nc.closed().then(() => {
    up = false;
    tell();
  });
  return {
    live: () => up && !closed && !sub.isClosed(),
    onChange: (listener) => void listeners.add(listener),
    close() {
      closed = true;
      up = false;
      sub.unsubscribe();
      tell();
    },
  };
}
