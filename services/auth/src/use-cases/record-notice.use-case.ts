import type { Notice } from '@dam/events';
import type { AuthStore } from '../domain/ports';
import { messageOf } from '../domain/notifications';

/**
 * A notice of another service becomes the message of each user it is for, once per notice id however often it
 * arrives: the claim and the messages commit together, so a redelivery after a crash finds both or neither. Who it
 * is for is decided now: a user disabled meanwhile is not told, an ADMIN made later is not either.
 * Returns how many users were told (0 for a notice already recorded).
 */
export async function recordNotice(store: AuthStore, notice: Notice): Promise<number> {
  const { audience, message, topic, at } = messageOf(notice);
  return store.transaction(async (tx) => {
    if (!(await tx.notifications.claimNotice(notice.id))) return 0;
    const users = await tx.notifications.recipients(audience);
    await tx.notifications.add(users.map((userId) => ({ userId, message, at, ...(topic ? { topic } : {}) })));
    return users.length;
  });
}
