import { BlockList, isIP } from 'node:net';

/**
 * CONTRACT §11 outbound guard: addresses a request made on a tenant's behalf (webhook deliveries, ingest
 * fetches) must never reach: loopback, private, link-local (cloud metadata), CGNAT, multicast, reserved,
 * unspecified, and IPv6 forms that map onto IPv4. Allow-listed hosts (WEBHOOK_ALLOW_HOSTS, INGEST_ALLOW_HOSTS)
 * pass anyway, and only they may use plain http. Deliveries check again after DNS and after every redirect.
 */
const BLOCKED = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  BLOCKED.addSubnet(net, prefix, 'ipv4');
}
for (const [net, prefix] of [
  ['::', 96], // unspecified, loopback, and IPv4-compatible `::a.b.c.d` (the URL parser writes `::10.0.0.5` as `::a00:5`)
  ['64:ff9b::', 96], // NAT64
  ['100::', 64], // discard
  ['2001:db8::', 32], // documentation
  ['2002::', 16], // 6to4 embeds an IPv4 address
  ['fc00::', 7], // unique local (incl. fd00:ec2::254 metadata)
  ['fe80::', 10], // link-local
  ['ff00::', 8], // multicast
] as const) {
  BLOCKED.addSubnet(net, prefix, 'ipv6');
}

const BLOCKED_NAMES = new Set(['localhost', 'metadata', 'metadata.google.internal', 'instance-data', 'instance-data.ec2.internal']);

/** True for an IP address no outbound request may reach. */
export function isForbiddenAddress(ip: string): boolean {
  const bare = ip.replace(/^\[|\]$/g, '');
  const family = isIP(bare);
  if (family === 0) return true;
  if (family === 4) return BLOCKED.check(bare, 'ipv4');
  // IPv4-mapped forms (`::ffff:10.0.0.5`, `::ffff:a00:5`) are refused outright; IPv4-compatible ones by `::/96`.
  const v6 = bare.toLowerCase();
  if (v6.startsWith('::ffff:') || /^::[0-9.]+$/.test(v6) || /^(0{1,4}:){5}ffff:/.test(v6)) return true;
  return BLOCKED.check(v6, 'ipv6');
}

/** Entries of an env list (`a.example.com,127.0.0.1:9000,[::1]:9000`), lower-cased. */
export const parseAllowHosts = (value: string | undefined): string[] =>
  (value ?? '')
    .split(',')
    .map((h) => h.trim().toLowerCase())
    .filter(Boolean);

const bareHost = (host: string): string =>
  host
    .toLowerCase()
    .replace(/^\[|\]$/g, '')
    .replace(/\.$/, '');

/**
 * Whether `url` is allow-listed: an entry `host` admits every port of that host, an entry `host:port` (`[v6]:port`)
 * that port only. The host is compared as the URL parser writes it, so other spellings of an address (`0x7f000001`,
 * `2130706433`, `127.1` for 127.0.0.1) reach the port named and no other (security review F18).
 */
export function isAllowListed(url: URL, allowHosts: readonly string[]): boolean {
  const host = bareHost(url.hostname);
  const port = url.port || (url.protocol === 'https:' ? '443' : url.protocol === 'http:' ? '80' : '');
  return allowHosts.some((entry) => {
    const withPort = /^(\[[^\]]+\]|[^:]+):(\d+)$/.exec(entry);
    return withPort ? bareHost(withPort[1] as string) === host && Number(withPort[2]) === Number(port) : bareHost(entry) === host;
  });
}

/**
 * Why `url` may not be a destination, or undefined when it may (as far as can be told before DNS): its
 * scheme, a blocked literal address or name, or plain http to a host that is not allow-listed.
 */
export function outboundUrlProblem(url: string, allowHosts: readonly string[]): string | undefined {
  if (!URL.canParse(url)) return 'must be an absolute http(s) URL';
  const u = new URL(url);
  if (u.protocol !== 'https:' && u.protocol !== 'http:') return 'must be an http(s) URL';
  if (u.username || u.password) return 'must not carry credentials';
  const host = bareHost(u.hostname);
  if (isAllowListed(u, allowHosts)) return undefined;
  if (u.protocol === 'http:') return 'must use https (plain http only for allow-listed hosts)';
  if (isIP(host) !== 0) return isForbiddenAddress(host) ? 'must not point at a loopback, private, link-local or reserved address' : undefined;
  if (BLOCKED_NAMES.has(host) || host.endsWith('.localhost') || host.endsWith('.internal') || !host.includes('.')) {
    return 'must name a public host';
  }
  return undefined;
}
