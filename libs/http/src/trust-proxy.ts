/**
 * Which proxies in front of a service may tell it the client's address (`X-Forwarded-For`), from env
 * `TRUST_PROXY`: unset, empty, `false` or `0` → none (the socket's peer is the client); a number → that many
 * hops; otherwise a comma-separated list of addresses, CIDRs or express's names (`loopback`, `uniquelocal`).
 * A client's own X-Forwarded-For is never believed beyond the trusted hops, so it cannot pick its bucket.
 */
export type TrustProxy = false | number | string[];

export function parseTrustProxy(value: string | undefined): TrustProxy {
  const v = (value ?? '').trim();
  if (v === '' || v.toLowerCase() === 'false' || v === '0') return false;
  if (/^\d+$/.test(v)) return Number(v);
  if (v.toLowerCase() === 'true') {
    throw new Error('TRUST_PROXY=true would trust every hop (any client picks its own address): give a hop count or CIDRs');
  }
  return v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}
