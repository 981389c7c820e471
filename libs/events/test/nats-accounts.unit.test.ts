import { NATS_DURABLES, NATS_IDENTITIES, natsPermissions, renderNatsAuthorization } from '../src';

// Security review F4 (issue 30): every durable carries its owner's name, and whoever may name consumers at run time on
// a stream is refused every other identity's durable there.
describe('NATS consumer names and rights', () => {
  const durables = Object.entries(NATS_DURABLES).flatMap(([owner, list]) => (list ?? []).map((d) => ({ owner, ...d })));

  it("names every durable under its owner's prefix, once", () => {
    for (const d of durables) expect(d.name.startsWith(`${d.owner}-`)).toBe(true);
    expect(new Set(durables.map((d) => `${d.stream}/${d.name}`)).size).toBe(durables.length);
  });

  it('lets each identity pull its own durables', () => {
    for (const d of durables) expect(natsPermissions(d.owner as (typeof NATS_IDENTITIES)[number])?.publish).toContain(`$JS.API.CONSUMER.MSG.NEXT.${d.stream}.${d.name}`);
  });

  it.each(['subscriber', 'search', 'link-signing'] as const)("denies %s every other identity's durable on the streams it names consumers in", (identity) => {
    const p = natsPermissions(identity);
    const foreign = durables.filter((d) => d.owner !== identity && p?.publish.some((s) => s === `$JS.API.CONSUMER.MSG.NEXT.${d.stream}.*`));
    expect(foreign.length).toBeGreaterThan(0);
    for (const d of foreign) {
      expect(p?.publishDeny).toEqual(expect.arrayContaining([`$JS.API.CONSUMER.DELETE.${d.stream}.${d.name}`, `$JS.API.CONSUMER.MSG.NEXT.${d.stream}.${d.name}`, `$JS.ACK.${d.stream}.${d.name}.>`]));
    }
    expect(p?.publishDeny?.some((s) => s.includes(`.${identity}-`))).toBe(false);
    // The ephemeral-create subject (no name token) updates whatever durable its body names: granted on no shared stream.
    expect(p?.publish.filter((s) => /^\$JS\.API\.CONSUMER\.CREATE\.(?!KV_)[^.]+$/.test(s))).toEqual([]);
  });

  it('renders the denials into the server configuration', () => {
    const conf = renderNatsAuthorization([{ identity: 'subscriber', publicKey: 'UKEY' }]);
    expect(conf).toContain('deny: ["$JS.API.CONSUMER.CREATE.ASSET_EVENTS.webhook-deliveries"');
  });
});
