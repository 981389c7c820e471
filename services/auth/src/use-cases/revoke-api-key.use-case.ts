import type { AuthStore } from '../domain/ports';
import { apiKeyDisabledMessage } from '../domain/notifications';

/**
 * Revokes a key of the group; its owner hears of it at their next login (Login's notifications), unless they revoked
 * it themselves. The revocation and the message commit together. False when the group has no such unrevoked key.
 */
export async function revokeApiKey(store: AuthStore, input: { groupId: number; keyId: string; byUserId: number }): Promise<boolean> {
  return store.transaction(async (tx) => {
    const key = await tx.apiKeys.revoke(input.groupId, input.keyId);
    if (!key) return false;
    if (key.user_id !== input.byUserId) await tx.notifications.add([{ userId: key.user_id, message: apiKeyDisabledMessage(key.name) }]);
    return true;
  });
}
