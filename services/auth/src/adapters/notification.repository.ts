import type { Pool, PoolClient } from '@dam/db';
import type { Notifications } from '../domain/ports';
import { shownMessage, type Audience, type NewNotification } from '../domain/notifications';

type Queryable = Pick<Pool | PoolClient, 'query'>;

/** Longer than DAM_INTERNAL keeps messages (a week, libs/events nats.ts). */
const CONSUMED_IDS_MIN_DAYS = 8;

/** `user_notifications` and `consumed_notices`: Login's messages, auth's alone. */
export class NotificationRepository implements Notifications {
  constructor(private readonly db: Queryable) {}

  /**
   * Adds messages (in the caller's transaction when `db` is one). A message with a topic joins the user's unseen
   * message of that topic: it takes the newer text and time, and counts one more.
   */
  async add(messages: readonly NewNotification[]): Promise<void> {
    for (const m of messages) {
      // Notices are handled in parallel: of one topic's, the text of the latest by its own time stays.
      await this.db.query(
        `INSERT INTO user_notifications (user_id, topic, message, created_at) VALUES ($1, $2, $3, coalesce($4::timestamptz, now()))
         ON CONFLICT (user_id, topic) WHERE seen_at IS NULL AND topic IS NOT NULL
         DO UPDATE SET repeats = user_notifications.repeats + 1,
           message = CASE WHEN EXCLUDED.created_at >= user_notifications.created_at THEN EXCLUDED.message ELSE user_notifications.message END,
           created_at = GREATEST(EXCLUDED.created_at, user_notifications.created_at)`,
        [m.userId, m.topic ?? null, m.message, m.at ?? null],
      );
    }
  }

  /** The users a notice is for: one user of the group, or its users of some roles; never a disabled or deleted one. */
  async recipients(audience: Audience): Promise<number[]> {
    const { rows } =
      'userId' in audience
        ? await this.db.query<{ id: number }>('SELECT id FROM users WHERE id = $1 AND group_id = $2 AND NOT disabled AND deleted_at IS NULL', [
            audience.userId,
            audience.groupId,
          ])
        : await this.db.query<{ id: number }>(
            'SELECT id FROM users WHERE group_id = $1 AND role_id = ANY($2::smallint[]) AND NOT disabled AND deleted_at IS NULL ORDER BY id',
            [audience.groupId, audience.roleIds],
          );
    return rows.map((r) => r.id);
  }

  /** Claims a notice id (`consumed_notices`): false when it was claimed before. */
  async claimNotice(noticeId: string): Promise<boolean> {
    const fresh = await this.db.query('INSERT INTO consumed_notices (id) VALUES ($1) ON CONFLICT (id) DO NOTHING', [noticeId]);
    return (fresh.rowCount ?? 0) > 0;
  }

  /**
   * The user's unseen messages, now seen: the newest `limit`, oldest first. One statement: two logins at once
   * cannot both return a message, and a message added meanwhile waits for the next login.
   */
  async takeUnseen(userId: number, limit: number): Promise<string[]> {
    const { rows } = await this.db.query<{ message: string; repeats: number }>(
      `WITH taken AS (
         UPDATE user_notifications SET seen_at = now() WHERE user_id = $1 AND seen_at IS NULL
         RETURNING id, message, repeats, created_at)
       SELECT message, repeats FROM (SELECT * FROM taken ORDER BY created_at DESC, id DESC LIMIT $2) newest
       ORDER BY created_at, id`,
      [userId, limit],
    );
    return rows.map((r) => shownMessage(r.message, r.repeats));
  }

  /** Deletes messages and consumed notice ids older than the retention, in bounded batches; returns the messages deleted. */
  async prune(retentionDays: number): Promise<number> {
    const messages = await this.db.query(
      `DELETE FROM user_notifications WHERE id IN (
         SELECT id FROM user_notifications WHERE created_at < now() - make_interval(days => $1) LIMIT 5000)`,
      [retentionDays],
    );
    // The ids outlive DAM_INTERNAL's week whatever the retention: a notice still in the stream (a durable made again
    // reads it from the start) must find its id and stay one message.
    await this.db.query(
      `DELETE FROM consumed_notices WHERE id IN (
         SELECT id FROM consumed_notices WHERE consumed_at < now() - make_interval(days => $1) LIMIT 5000)`,
      [Math.max(retentionDays, CONSUMED_IDS_MIN_DAYS)],
    );
    return messages.rowCount ?? 0;
  }
}
