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

  it('reuses a group\'s settings until the TTL passes, per group', async () => {
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
