/**
 * Credentials that clients may put in a URL: the JWT of `validate` (`_jwt`), upload keys (`uploadkey`), API
 * keys, tus/upload tokens and signed-link signatures. Their values never reach a log line.
 */
const SECRET_PARAMS = new Set([
  '_jwt',
  'jwt',
  'token',
  'access_token',
  'api_key',
  'apikey',
  'uploadkey',
  'upload_key',
  'signature',
  'sig',
  'x-amz-signature',
  'x-amz-credential',
  'x-amz-security-token',
  'password',
  'secret',
]);

export const REDACTED = '[redacted]';

const isSecretParam = (name: string): boolean => {
  let decoded = name;
  try {
    decoded = decodeURIComponent(name.replace(/\+/g, ' '));
  } catch {
    // a malformed escape: judge the raw name
  }
  return SECRET_PARAMS.has(decoded.trim().toLowerCase());
};

/** `url` (path and query, as logged) with the values of credential parameters replaced by `[redacted]`. */
export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  if (q < 0) return url;
  const hash = url.indexOf('#', q);
  const query = url.slice(q + 1, hash < 0 ? undefined : hash);
  const redacted = query
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      const name = eq < 0 ? pair : pair.slice(0, eq);
      return eq >= 0 && isSecretParam(name) ? `${name}=${REDACTED}` : pair;
    })
    .join('&');
  return `${url.slice(0, q + 1)}${redacted}${hash < 0 ? '' : url.slice(hash)}`;
}
