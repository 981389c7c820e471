import { NATS_DURABLES, NATS_IDENTITIES, natsPermissions, parseSubscribers, renderNatsAuthorization, type NatsIdentity } from '../src';

// Security review F4 (issue 30): each identity may manage and read only consumers under its own name prefix, by exact
// name (NATS matches permissions by whole tokens, so no wildcard over consumer names is granted to anyone but admin);
// an outside system's user acts on the one consumer named as itself.
describe('NATS consumer names and rights', () => {
  const durables = Object.entries(NATS_DURABLES).flatMap(([owner, list]) => (list ?? []).map((d) => ({ owner, ...d })));

  it("names every service consumer under its owner's prefix, once", () => {
    for (const d of durables) expect(d.name.startsWith(`${d.owner}-`)).toBe(true);
    expect(new Set(durables.map((d) => `${d.stream}/${d.name}`)).size).toBe(durables.length);
  });

  it('lets each identity pull its own consumers', () => {
    for (const d of durables) expect(natsPermissions(d.owner as NatsIdentity)?.publish).toContain(`$JS.API.CONSUMER.MSG.NEXT.${d.stream}.${d.name}`);
  });

  /** The consumer names in `identity`'s grants on the suite's streams (KV buckets' streams are their users' own). */
  const consumerNamesOf = (identity: NatsIdentity): string[] =>
    (natsPermissions(identity)?.publish ?? []).flatMap((s) => {
      const m =
        /^\$JS\.API\.CONSUMER\.(?:DURABLE\.CREATE|CREATE|INFO|DELETE|MSG\.NEXT)\.([^.]+)(?:\.([^.]+))?/.exec(s) ?? /^\$JS\.ACK\.([^.]+)\.([^.]+)/.exec(s);
      if (!m || m[1]?.startsWith('KV_')) return [];
      // No name token: the ephemeral-create subject, which updates whatever durable its body names (nats-server 2.9).
      return [m[2] ?? '(none)'];
    });

  it.each([...NATS_IDENTITIES.filter((i) => i !== 'admin'), 'subscriber-crm' as const])(
    'grants %s consumer names under its own prefix only, none by wildcard',
    (identity) => {
      const names = consumerNamesOf(identity);
      for (const name of names) expect(name === identity || name.startsWith(`${identity}-`)).toBe(true);
      expect(names.filter((n) => n === '*' || n === '>' || n === '(none)')).toEqual([]);
    },
  );

  it('grants consumers (key listings, watches) of a KV bucket only to the one identity that uses it', () => {
    const services = NATS_IDENTITIES.filter((i) => i !== 'admin');
    const kvStreamsOf = (identity: NatsIdentity, what: RegExp) =>
      new Set((natsPermissions(identity)?.publish ?? []).flatMap((s) => (what.exec(s)?.[1] ? [what.exec(s)?.[1] as string] : [])));
    const users = new Map<string, string[]>();
    for (const i of services) for (const b of kvStreamsOf(i, /^\$JS\.API\.STREAM\.INFO\.(KV_[^.]+)$/)) users.set(b, [...(users.get(b) ?? []), i]);
    const shared = [...users].filter(([, who]) => who.length > 1).map(([b]) => b);
    expect(shared).toEqual(expect.arrayContaining(['KV_SERVICE_TOKENS']));
    for (const i of services) {
      const withConsumers = kvStreamsOf(i, /^\$JS\.API\.CONSUMER\.[A-Z.]+\.(KV_[^.]+)/);
      expect([i, [...withConsumers].filter((b) => shared.includes(b))]).toEqual([i, []]);
    }
  });

  it("gives an outside system's user the consumer named as itself and nothing else on ASSET_EVENTS", () => {
    expect(new Set(consumerNamesOf('subscriber-crm'))).toEqual(new Set(['subscriber-crm']));
    expect(natsPermissions('subscriber-crm')?.subscribe).toEqual(['_INBOX_subscriber-crm.>']);
    expect(natsPermissions('subscriber-crm')?.publish.some((s) => /CONSUMER\.(NAMES|LIST)/.test(s))).toBe(false);
  });

  it('takes outside systems by name, and refuses names that are not subscriber-<system>', () => {
    expect(parseSubscribers(' subscriber-crm,subscriber-erp ,subscriber-crm')).toEqual(['subscriber-crm', 'subscriber-erp']);
    for (const bad of ['subscriber', 'subscriber-', 'crm', 'subscriber-CRM', 'subscriber-a.b', 'subscriber-*', `subscriber-${'x'.repeat(41)}`]) {
      expect(() => parseSubscribers(bad)).toThrow(/not a subscriber identity/);
    }
    expect(() => natsPermissions('subscriber' as NatsIdentity)).toThrow(/unknown NATS identity/);
  });

  it('renders each outside system as its own user', () => {
    const conf = renderNatsAuthorization([
      { identity: 'subscriber-crm', publicKey: 'UCRM' },
      { identity: 'subscriber-erp', publicKey: 'UERP' },
    ]);
    expect(conf).toContain('"$JS.API.CONSUMER.MSG.NEXT.ASSET_EVENTS.subscriber-crm"');
    expect(conf).toContain('"$JS.API.CONSUMER.MSG.NEXT.ASSET_EVENTS.subscriber-erp"');
    expect(conf).not.toContain('ASSET_EVENTS.*');
  });
});
