import { PERMISSION, ROLE_NAMES, permissionsFor, roleIdOfKeyRole, type ApiKeyRole, type Principal } from '@dam/auth-tokens';

export interface ApiKeyRecord {
  id: string;
  group_id: number;
  user_id: number;
  name: string;
  role: ApiKeyRole;
  created_at: Date;
}

export interface ApiKeyView {
  key_id: string;
  name: string;
  role: ApiKeyRole;
  created_by: number;
  created_at: string;
}

export const toApiKeyView = (k: ApiKeyRecord): ApiKeyView => ({
  key_id: k.id,
  name: k.name,
  role: k.role,
  created_by: k.user_id,
  created_at: k.created_at.toISOString(),
});

/**
 * "An API key acts as the user who created it, limited to the key's role" (CONTRACT §11): the tokens both the
 * key's role and the user's current role grant, so demoting the user also narrows their keys. REISSUE_CALLBACKS
 * exists only on ASSET_ADMIN keys and survives while the creator is still an ADMIN.
 */
export function apiKeyPrincipal(key: ApiKeyRecord, userRoleId: number): Principal {
  const userTokens = new Set<string>(permissionsFor(userRoleId));
  if (userRoleId === 1) userTokens.add(PERMISSION.REISSUE_CALLBACKS);
  const permissions = permissionsFor(key.role).filter((t) => userTokens.has(t));
  // The weaker of the two roles (higher id = fewer rights) names the principal's role.
  const roleId = Math.max(userRoleId, roleIdOfKeyRole(key.role));
  return {
    user_id: key.user_id,
    group_id: key.group_id,
    role_id: roleId,
    role_name: ROLE_NAMES[roleId] ?? 'UNKNOWN',
    permissions,
    via: 'api_key',
    key_id: key.id,
    key_role: key.role,
  };
}
