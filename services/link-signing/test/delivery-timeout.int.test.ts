import { createServiceSigner, parseSigningKey, permissionsFor, type Principal } from '@dam/auth-tokens';
import { INTERNAL_PATHS } from '@dam/internal-api';
import { serviceIdentities, startInternalStub, type InternalStub } from '@dam/testing';
import { deliveryTimeoutMs, suiteClients } from '../src/adapters/suite.clients';

// Issue 35: a bulk get_link's delivery call had the same 5 s as one id's; under load metadata took longer for 20 ids
// and get_link answered 503. The call now has 100 ms an id more (15 s for the console's 100).
const identities = serviceIdentities();
const SLOW_MS = 6_000;
let metadata: InternalStub;
beforeAll(async () => {
  metadata = await startInternalStub({
    identities,
    service: 'metadata',
    callers: ['link-signing'],
    // Longer than one id's 5 s, well within 100 ids' 15 s.
    answer: (method, path) => (method === 'POST' && path === INTERNAL_PATHS.delivery ? { status: 200, body: { items: [] }, delayMs: SLOW_MS } : undefined),
  });
});
afterAll(async () => {
  await metadata.close();
});

const user: Principal = { user_id: 7, group_id: 1, role_id: 3, role_name: 'USER', permissions: permissionsFor('USER'), via: 'jwt' };

describe("a bulk get_link's delivery call (issue 35)", () => {
  it('waits longer than one id would for metadata to answer 100 ids', async () => {
    expect(deliveryTimeoutMs(1)).toBeLessThan(SLOW_MS);
    expect(deliveryTimeoutMs(100)).toBeGreaterThan(2 * SLOW_MS);
    const clients = suiteClients({
      authUrl: 'http://127.0.0.1:9',
      metadataUrl: metadata.url,
      signer: createServiceSigner(parseSigningKey(identities.privateKey('link-signing'))),
    });
    const ids = Array.from({ length: 100 }, (_, i) => `${i}`.padStart(32, 'a'));
    // Before: UNAVAILABLE after 5 s (the internal client's default timeout; get_link answered 503).
    await expect(clients.delivery(user, ids, 'original')).resolves.toEqual([]);
    expect(metadata.calls(INTERNAL_PATHS.delivery)).toBe(1);
  }, 30_000);
});
