/**
 * Which proxies in front of a service may tell it the client's address (`X-Forwarded-For`), from env
 * `TRUST_PROXY`: `none`, `false` or `0` → none (the socket's peer is the client); a number → that many hops;
 * otherwise a comma-separated list of addresses, CIDRs or express's names (`loopback`, `uniquelocal`).
 * Unset or empty also means none, except with NODE_ENV=production, where it must be said (trustProxyProblem).
 * A client's own X-Forwarded-For is never believed beyond the trusted hops, so it cannot pick its bucket.
 */
export type TrustProxy = false | number | string[];

const NONE = new Set(['none', 'false', '0']);

export function parseTrustProxy(value: string | undefined): TrustProxy {
  const v = (value ?? '').trim();
  if (v === '' || NONE.has(v.toLowerCase())) return false;
  if (/^\d+$/.test(v)) return Number(v);
  if (v.toLowerCase() === 'true') {
    throw new Error('TRUST_PROXY=true would trust every hop (any client picks its own address): give a hop count or CIDRs');
  }
  return v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

/**
 * What is wrong with the environment's TRUST_PROXY, for the start-up's list of problems. In production it must be
 * set: behind an ingress, "unset" made every client the ingress's address, so every per-address budget (login
 * failures, requests, failed authentications) was one budget shared by all tenants (security review F1).
 */
export function trustProxyProblem(env: NodeJS.ProcessEnv): string | undefined {
  const value = env.TRUST_PROXY?.trim() ?? '';
  if (value === '' && env.NODE_ENV?.trim() === 'production') {
    return (
      'TRUST_PROXY: must be set when NODE_ENV=production: the proxies in front of the service (a hop count, or ' +
      "addresses/CIDRs such as the ingress pods' range), or `none` when clients connect to it directly"
    );
  }
  try {
    parseTrustProxy(value);
    return undefined;
  } catch (err) {
    return `TRUST_PROXY: ${(err as Error).message}`;
  }
}
