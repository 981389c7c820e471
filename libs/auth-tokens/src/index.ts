export {
  API_KEY_ROLES,
  PERMISSION,
  PERMISSIONS,
  ROLES,
  ROLE_NAMES,
  isRoleId,
  permissionsFor,
  roleIdOfKeyRole,
  type ApiKeyRole,
  type Permission,
  type RoleId,
  type RoleName,
} from './roles';
export {
  canDeleteAsset,
  canEditAsset,
  canReadAsset,
  hasAny,
  hasPermission,
  readsOwnOnly,
  requireAny,
  type Principal,
} from './principal';
export { signJwt, verifyJwt, type JwtClaims, type JwtInput } from './jwt';
export { API_KEY_PREFIX, generateApiKey, hashApiKey, looksLikeApiKey } from './api-key';
export {
  PRINCIPAL_HEADER,
  PRINCIPAL_SIG_HEADER,
  decodePrincipal,
  encodePrincipal,
  principalOf,
  requirePrincipal,
} from './principal-header';
export { API_KEY_HEADER, createAuthenticator, principalFromJwt, type AuthenticatorOptions } from './authenticator';
