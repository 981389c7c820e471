import type { Pool } from '@dam/db';
import type { Notice } from '@dam/events';
import { NotificationRepository } from '../adapters/notification.repository';
import { messageOf } from '../domain/notifications';

/**
 * A notice of another service becomes the message of each user it is for, once per notice id however often it
 * arrives. Who it is for is decided now: a user disabled meanwhile is not told, an ADMIN made later is not either.
 * Returns how many users were told (0 for a notice already recorded).
 */
export async function recordNotice(pool: Pool, notice: Notice): Promise<number> {
  const { audience, message, topic, at } = messageOf(notice);
  let told = 0;
  await NotificationRepository.onceFor(pool, notice.id, async (store) => {
    const users = await store.recipients(audience);
    await store.add(users.map((userId) => ({ userId, message, at, ...(topic ? { topic } : {}) })));
    told = users.length;
  });
  return told;
}
