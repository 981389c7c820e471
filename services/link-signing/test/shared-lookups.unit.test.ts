import type { Principal } from '@dam/auth-tokens';
import type { AccessOwner, DeliveryTransform } from '@dam/internal-api';
import { sharedLookups } from '../src/adapters/shared-lookups';
import type { SuiteClients } from '../src/adapters/suite.clients';

const owner: AccessOwner = { user_id: 5, group_id: 1, role_id: 1, active: true };
const principal = { user_id: 5, group_id: 1, role_id: 1 } as Principal;

function fake() {
  const calls = { owner: 0, delivery: 0, transforms: [] as Array<DeliveryTransform | undefined> };
  let answer: () => Promise<AccessOwner | undefined> = () => Promise.resolve(owner);
  const clients: SuiteClients = {
    accessIdOf: () => Promise.resolve('acc'),
    accessOwner: () => {
      calls.owner += 1;
      return answer();
    },
    delivery: (_p, _ids, _key, transform) => {
      calls.delivery += 1;
      calls.transforms.push(transform);
      return new Promise((resolve) => setImmediate(() => resolve([])));
    },
  };
  return { clients, calls, answerWith: (fn: () => Promise<AccessOwner | undefined>) => (answer = fn) };
}

describe('the edge lookups shared by the requests of one link (security review F13)', () => {
  it('reuses an accessID owner (or its absence) for the TTL, then asks again', async () => {
    let now = 0;
    const f = fake();
    const shared = sharedLookups(f.clients, { accessTtlMs: 5000, now: () => now });
    await Promise.all([shared.accessOwner('acc'), shared.accessOwner('acc'), shared.accessOwner('acc')]);
    expect(f.calls.owner).toBe(1);
    now = 4999;
    f.answerWith(() => Promise.resolve(undefined)); // rotated away meanwhile
    expect(await shared.accessOwner('acc')).toEqual(owner);
    now = 5000;
    expect(await shared.accessOwner('acc')).toBeUndefined();
    expect(await shared.accessOwner('acc')).toBeUndefined();
    expect(f.calls.owner).toBe(2);
  });

  it('never keeps a failure (auth down), and with a TTL of 0 only shares concurrent lookups', async () => {
    const f = fake();
    const shared = sharedLookups(f.clients, { accessTtlMs: 5000 });
    f.answerWith(() => Promise.reject(new Error('auth down')));
    await expect(shared.accessOwner('acc')).rejects.toThrow('auth down');
    f.answerWith(() => Promise.resolve(owner));
    expect(await shared.accessOwner('acc')).toEqual(owner);
    expect(f.calls.owner).toBe(2);

    const g = fake();
    const uncached = sharedLookups(g.clients, { accessTtlMs: 0 });
    await Promise.all([uncached.accessOwner('acc'), uncached.accessOwner('acc')]);
    await uncached.accessOwner('acc');
    expect(g.calls.owner).toBe(2);
  });

  it('shares concurrent delivery calls of one user, asset and key only, and keeps none', async () => {
    const f = fake();
    const shared = sharedLookups(f.clients, { accessTtlMs: 5000 });
    await Promise.all([
      shared.delivery(principal, ['a'], 'original'),
      shared.delivery(principal, ['a'], 'original'),
      shared.delivery(principal, ['a'], 'thumbnail'),
      shared.delivery({ ...principal, user_id: 6 }, ['a'], 'original'),
    ]);
    expect(f.calls.delivery).toBe(3);
    await shared.delivery(principal, ['a'], 'original');
    expect(f.calls.delivery).toBe(4);
  });

  it('passes a transform on (CONTRACT §15) and shares a call only with the same transform', async () => {
    const f = fake();
    const shared = sharedLookups(f.clients, { accessTtlMs: 5000 });
    await Promise.all([
      shared.delivery(principal, ['a'], 'original', { w: 100, format: 'webp' }),
      shared.delivery(principal, ['a'], 'original', { w: 100, format: 'webp' }),
      shared.delivery(principal, ['a'], 'original', { w: 100, format: 'avif' }),
      shared.delivery(principal, ['a'], 'original'),
    ]);
    // Before: one call, without the transform, answered all four (the edge served the original for every link).
    expect(f.calls.delivery).toBe(3);
    expect(f.calls.transforms).toEqual([{ w: 100, format: 'webp' }, { w: 100, format: 'avif' }, undefined]);
  });
});
