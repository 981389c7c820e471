// The public routes' table lives in @dam/auth-tokens: the gateway and each owning service check it alike.
export { pathSegments, resolveRoute, ROUTES, type RouteMatch, type RouteRule, type Upstream } from '@dam/auth-tokens';

/**
 * The path of a request target as the URL parser reads it, which is the path the gateway forwards: `\` as `/`, dot
 * segments (also `%2e`) resolved, characters outside the path set percent-encoded.
 */
export function canonicalPath(target: string): string {
  return new URL(target, 'http://gateway.invalid').pathname;
}
