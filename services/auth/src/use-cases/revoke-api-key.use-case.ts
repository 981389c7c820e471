import { withTransaction, type Pool } from '@dam/db';
import { ApiKeyRepository } from '../adapters/api-key.repository';
import { NotificationRepository } from '../adapters/notification.repository';
import { apiKeyDisabledMessage } from '../domain/notifications';

/**
 * Revokes a key of the group; its owner hears of it at their next login (Login's notifications), unless they revoked
 * it themselves. The revocation and the message commit together. False when the group has no such unrevoked key.
 */
export async function revokeApiKey(pool: Pool, input: { groupId: number; keyId: string; byUserId: number }): Promise<boolean> {
  return withTransaction(pool, async (client) => {
    const key = await new ApiKeyRepository(client).revoke(input.groupId, input.keyId);
    if (!key) return false;
    if (key.user_id !== input.byUserId) await new NotificationRepository(client).add([{ userId: key.user_id, message: apiKeyDisabledMessage(key.name) }]);
    return true;
  });
}
