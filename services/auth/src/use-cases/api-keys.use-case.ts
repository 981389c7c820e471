import { randomUUID } from 'node:crypto';
import { PERMISSION, generateApiKey, hashApiKey, requireAny, roleIdOfKeyRole, type ApiKeyRole, type Principal } from '@dam/auth-tokens';
import { forbidden, notFound } from '@dam/errors';
import { toApiKeyView, type ApiKeyView } from '../domain/api-keys';
import type { AuthStore, Listed, Page } from '../domain/ports';
import { revokeApiKey } from './revoke-api-key.use-case';

/**
 * A new API key (MANAGE_USERS): minted by a person signed in, never by a key (keys would outlive it and could be
 * stronger), and never above the minter's own role. The key is seen this once; only its hash is kept.
 */
export async function mintApiKey(
  store: AuthStore,
  p: Principal,
  input: { name: string; role: ApiKeyRole },
): Promise<{ key_id: string; name: string; role: ApiKeyRole; key: string }> {
  requireAny(p, [PERMISSION.MANAGE_USERS]);
  if (p.via !== 'jwt') throw forbidden('API keys are created by a signed-in user (JWT), not with an API key', 'API_KEY_CANNOT_MINT');
  // Lower role ids are stronger; ASSET_ADMIN acts as ADMIN.
  if (roleIdOfKeyRole(input.role) < p.role_id) {
    throw forbidden(`A key of role ${input.role} would be stronger than your own role ${p.role_name}`, 'ROLE_ABOVE_YOUR_OWN');
  }
  const key = generateApiKey();
  const record = await store.apiKeys.insert(
    { id: randomUUID(), group_id: p.group_id, user_id: p.user_id, name: input.name, role: input.role },
    hashApiKey(key),
  );
  return { key_id: record.id, name: record.name, role: record.role, key };
}

/** The group's unrevoked keys (MANAGE_USERS). */
export async function listApiKeys(store: AuthStore, p: Principal, page: Page): Promise<Listed<ApiKeyView>> {
  requireAny(p, [PERMISSION.MANAGE_USERS]);
  const { items, total } = await store.apiKeys.listActive(p.group_id, page);
  return { items: items.map(toApiKeyView), page: page.page, page_size: page.page_size, total };
}

export const apiKeyNotFound = () => notFound('API_KEY_NOT_FOUND', 'API key not found');

/** Revokes a key of the group (MANAGE_USERS); 404 when the group has no such unrevoked key. */
export async function disableApiKey(store: AuthStore, p: Principal, keyId: string): Promise<void> {
  requireAny(p, [PERMISSION.MANAGE_USERS]);
  if (!(await revokeApiKey(store, { groupId: p.group_id, keyId, byUserId: p.user_id }))) throw apiKeyNotFound();
}
