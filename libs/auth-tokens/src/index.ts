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
export { callerKey, canDeleteAsset, canEditAsset, canReadAsset, hasAny, hasPermission, readsOwnOnly, requireAny, type Principal } from './principal';
export { signJwt, verifyJwt, type JwtClaims, type JwtInput } from './jwt';
export { API_KEY_PREFIX, generateApiKey, hashApiKey, looksLikeApiKey } from './api-key';
export { principalOf, toPrincipal } from './principal-claims';
export {
  SERVICE_TOKEN_HEADER,
  SERVICE_TOKEN_TTL_SECONDS,
  createServiceSigner,
  createServiceVerifier,
  generateServiceKey,
  parseSigningKey,
  parseTrustedKeys,
  serviceCallOf,
  serviceOfKeyId,
  type CallTarget,
  type GuardOptions,
  type ServiceCall,
  type ServiceJwk,
  type ServiceSigner,
  type ServiceVerifier,
  type SigningKey,
  type TrustedKey,
} from './service-token';
export { UNSIGNED_BODY, bodyHash, hasBody, receivedBody, type ReceivedBody } from './service-token-body';
export { REPLAY_BUCKET_TTL_MS, bucketReplayStore, memoryReplayStore, type CreateOnlyBucket, type ReplayStore } from './service-token-replay';
export { serviceKeyEnv, trustedKeysEnv } from './service-identity.env';
export { API_KEY_HEADER, UPLOAD_KEY_HEADER, createAuthenticator, principalFromJwt, type AuthenticatorOptions } from './authenticator';
export { pathSegments, requireRoutePermission, resolveRoute, ROUTES, type RouteMatch, type RouteRule, type Upstream } from './public-routes';
