import { isForbiddenAddress, outboundUrlProblem, parseAllowHosts } from '../src/outbound-address';
import { outboundTargetProblem } from '../src/outbound-fetch';

describe('outbound guard (CONTRACT §11)', () => {
  it.each([
    '127.0.0.1',
    '10.1.2.3',
    '172.16.0.1',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    '224.0.0.1',
    '::1',
    '::',
    '::ffff:127.0.0.1',
    '::127.0.0.2',
    '::7f00:2',
    '::a00:1',
    'fd00:ec2::254',
    'fe80::1',
    'not-an-ip',
  ])('%s is forbidden', (ip) => expect(isForbiddenAddress(ip)).toBe(true));
  it.each(['93.184.216.34', '8.8.8.8', '2606:4700:4700::1111'])('%s is public', (ip) => expect(isForbiddenAddress(ip)).toBe(false));

  it('refuses loopback, private and metadata destinations, credentials, other schemes and plain http', () => {
    for (const url of [
      'https://127.0.0.1/hook',
      'https://[::1]/hook',
      'https://169.254.169.254/latest/meta-data',
      'https://10.0.0.5/x',
      'https://[::ffff:10.0.0.5]/x',
      'https://localhost/x',
      'https://api.localhost/x',
      'https://metadata.google.internal/x',
      // Other spellings of loopback and the metadata address: the URL parser normalises them, the check sees the IP.
      'https://2130706433/x',
      'https://0x7f.0.0.1/x',
      'https://0177.0.0.1/x',
      'https://127.1/x',
      'https://[0:0:0:0:0:ffff:7f00:1]/x',
      'https://[::ffff:169.254.169.254]/x',
      'https://0/x',
      'https://[::]/x',
      // IPv4-compatible: the parser writes these as [::7f00:2] and [::a00:1].
      'https://[::127.0.0.2]/x',
      'https://[::10.0.0.1]/x',
      'https://intranet/x',
      'http://hooks.example.com/x',
      'https://user:pw@hooks.example.com/x',
      'ftp://hooks.example.com/x',
      'not a url',
    ]) {
      expect({ url, problem: outboundUrlProblem(url, []) }).toEqual({ url, problem: expect.any(String) });
    }
    expect(outboundUrlProblem('https://hooks.example.com/a', [])).toBeUndefined();
    expect(outboundUrlProblem('https://93.184.216.34/a', [])).toBeUndefined();
  });

  it('lets allow-listed hosts through, plain http included', () => {
    const allow = parseAllowHosts(' 127.0.0.1, LocalHost ,');
    expect(allow).toEqual(['127.0.0.1', 'localhost']);
    expect(outboundUrlProblem('http://127.0.0.1:9000/hook', allow)).toBeUndefined();
    expect(outboundUrlProblem('http://localhost/hook', allow)).toBeUndefined();
    expect(outboundUrlProblem('http://10.0.0.1/hook', allow)).toEqual(expect.any(String));
  });

  it('lets a host:port entry through on that port only, however the host is spelt (security review F18)', async () => {
    const allow = parseAllowHosts('127.0.0.1:8099, [::1]:8099');
    const admitted = ['http://127.0.0.1:8099/hook', 'http://0x7f000001:8099/hook', 'http://127.1:8099/hook', 'http://[::1]:8099/hook'];
    const refused = [
      'http://127.0.0.1:8091/internal/v1/assets',
      'http://127.0.0.1:8222/varz',
      'http://0x7f000001:8222/varz',
      'https://0x7f000001/',
      'https://2130706433/',
      'https://127.1/',
      'http://127.0.0.1/',
      'http://[::1]:8222/varz',
      'http://localhost:8099/hook',
    ];
    const verdicts = async (urls: string[]) =>
      Promise.all(
        urls.map(async (url) => [
          url,
          outboundUrlProblem(url, allow) ??
            (await outboundTargetProblem(url, { allowHosts: allow, resolve: async () => [{ address: '127.0.0.1', family: 4 }] })),
        ]),
      );
    expect(await verdicts(admitted)).toEqual(admitted.map((url) => [url, undefined]));
    expect(await verdicts(refused)).toEqual(refused.map((url) => [url, expect.any(String)]));
  });
});
