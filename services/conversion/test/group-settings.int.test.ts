import { isAppError } from '@dam/errors';
import { GroupSettingsClient } from '@dam/internal-api';
import { serviceIdentities, startSettingsStub } from '@dam/testing';

const identities = serviceIdentities();

const signer = identities.signer('conversion');

describe('GroupSettingsClient (against a local HTTP stub of auth)', () => {
  let stub: Awaited<ReturnType<typeof startSettingsStub>>;

  beforeAll(async () => {
    stub = await startSettingsStub(identities, (groupId, call) =>
      groupId === 'down' ? { status: 503 } : { status: 200, body: { conversions: { profile: { image: [`v${call}`] } } } },
    );
  });
  afterAll(() => stub.close());

  it("reuses a group's settings until the TTL passes, per group", async () => {
    let now = 1_000;
    const client = new GroupSettingsClient({ authUrl: stub.url, signer, ttlMs: 30_000, now: () => now });
    expect(await client.get('a')).toEqual({ conversions: { profile: { image: ['v1'] } } });
    now += 29_000;
    expect(await client.get('a')).toEqual({ conversions: { profile: { image: ['v1'] } } });
    expect(stub.settingsCalls('a')).toBe(1);
    await client.get('b');
    expect(stub.settingsCalls('b')).toBe(1);
    now += 2_000;
    expect(await client.get('a')).toEqual({ conversions: { profile: { image: ['v2'] } } });
    expect(stub.settingsCalls('a')).toBe(2);
  });

  it("with auth's notices, reuses a group's settings until that group's notice, and reads fresh while they cannot arrive", async () => {
    let now = 1_000;
    let live = true;
    const listeners: Array<(groupId?: string) => void> = [];
    const notice = (groupId?: string) => listeners.forEach((l) => l(groupId));
    const changes = { live: () => live, onChange: (l: (groupId?: string) => void) => void listeners.push(l) };
    const client = new GroupSettingsClient({ authUrl: stub.url, signer, changes, maxAgeMs: 60_000, now: () => now });
    const image = async (g: string) => ((await client.get(g)) as { conversions: { profile: { image: string[] } } }).conversions.profile.image[0];
    const [n1, o1] = [await image('n1'), await image('o1')];
    now += 59_000;
    expect([await image('n1'), await image('o1')]).toEqual([n1, o1]);
    expect([stub.settingsCalls('n1'), stub.settingsCalls('o1')]).toEqual([1, 1]);
    // A notice of one group: that group is read again, the other still reused.
    notice('n1');
    expect(await image('n1')).not.toBe(n1);
    expect(await image('o1')).toBe(o1);
    expect([stub.settingsCalls('n1'), stub.settingsCalls('o1')]).toEqual([2, 1]);
    // The longest reuse is maxAgeMs even without a notice.
    now += 2_000;
    await image('o1');
    expect(stub.settingsCalls('o1')).toBe(2);
    // "Any group" (the connection went down): everything read again.
    notice();
    await image('o1');
    await image('n1');
    expect([stub.settingsCalls('n1'), stub.settingsCalls('o1')]).toEqual([3, 3]);
    // While notices cannot arrive: fresh every time (ttlMs 0).
    live = false;
    await image('o1');
    await image('o1');
    expect(stub.settingsCalls('o1')).toBe(5);
    // A notice that overtakes a read: that answer is used once but not kept (it may predate the change).
    live = true;
    const reading = client.get('r1');
    notice('other');
    await reading;
    await image('r1');
    expect(stub.settingsCalls('r1')).toBe(2);
    await image('r1');
    expect(stub.settingsCalls('r1')).toBe(2);
  });

  it('signs every settings request as conversion (the stub, like auth, refuses anything else)', async () => {
    expect((await fetch(`${stub.url}/internal/v1/groups/a/settings`)).status).toBe(401);
    const asGateway = new GroupSettingsClient({ authUrl: stub.url, signer: identities.signer('gateway') });
    await expect(asGateway.get('c')).rejects.toMatchObject({ kind: 'UNAVAILABLE' });
    expect(await new GroupSettingsClient({ authUrl: stub.url, signer }).get('c')).toEqual({ conversions: { profile: { image: ['v1'] } } });
  });

  it('throws UNAVAILABLE when auth fails or cannot be reached, and caches nothing', async () => {
    const client = new GroupSettingsClient({ authUrl: stub.url, signer });
    for (let i = 0; i < 2; i++) {
      const error: unknown = await client.get('down').catch((e: unknown) => e);
      expect(isAppError(error) && error.kind === 'UNAVAILABLE' && error.code === 'SETTINGS_UNAVAILABLE').toBe(true);
    }
    expect(stub.settingsCalls('down')).toBe(2);

    const unreachable = new GroupSettingsClient({ authUrl: 'http://127.0.0.1:1', signer, timeoutMs: 1000 });
    await expect(unreachable.get('a')).rejects.toMatchObject({ kind: 'UNAVAILABLE' });
  });
});
