import { ReadCache } from '../src/domain/read-cache';

const answer = (text: string) => ({ headers: { 'content-type': 'application/json' }, body: Buffer.from(text) });

function cache(opts: Partial<ConstructorParameters<typeof ReadCache>[0]> = {}) {
  let now = 1_000;
  const c = new ReadCache({ ttlMs: 1000, maxBytes: 1 << 20, now: () => now, ...opts });
  c.setEnabled(true);
  return { c, tick: (ms: number) => (now += ms) };
}

describe('the Get Data read cache', () => {
  it('keeps an answer under its key until the TTL, and serves nothing while disabled', () => {
    const { c, tick } = cache();
    expect(c.keep(c.begin('a1'), 'k', answer('one'))).toBe(true);
    expect(c.get('k')?.body.toString()).toBe('one');
    tick(999);
    expect(c.get('k')).toBeDefined();
    tick(1);
    expect(c.get('k')).toBeUndefined();
    c.keep(c.begin('a1'), 'k', answer('two'));
    c.setEnabled(false);
    expect(c.get('k')).toBeUndefined();
    expect(c.keep(c.begin('a1'), 'k', answer('three'))).toBe(false);
    c.setEnabled(true);
    // Turned on again, it starts empty: what was kept before may have changed meanwhile.
    expect(c.get('k')).toBeUndefined();
  });

  it('is off until turned on', () => {
    const c = new ReadCache({ ttlMs: 1000, maxBytes: 1024 });
    expect(c.keep(c.begin('a1'), 'k', answer('one'))).toBe(false);
    expect(c.get('k')).toBeUndefined();
  });

  it("drops every caller's answer of an invalidated asset, and no other", () => {
    const { c } = cache();
    c.keep(c.begin('a1'), 'alice a1', answer('x'));
    c.keep(c.begin('a1'), 'bob a1', answer('x'));
    c.keep(c.begin('a2'), 'alice a2', answer('y'));
    c.invalidate('a1');
    expect(c.get('alice a1')).toBeUndefined();
    expect(c.get('bob a1')).toBeUndefined();
    expect(c.get('alice a2')?.body.toString()).toBe('y');
  });

  it('does not keep an answer fetched while its asset changed (the notice overtook the fetch)', () => {
    const { c } = cache();
    const before = c.begin('a1');
    const other = c.begin('a2');
    c.invalidate('a1');
    // A fetch that starts after the notice may be kept; the one from before may not, nor may a second keep.
    const after = c.begin('a1');
    expect(c.keep(before, 'k-old', answer('old'))).toBe(false);
    expect(c.keep(after, 'k-new', answer('new'))).toBe(true);
    expect(c.keep(after, 'k-new', answer('again'))).toBe(false);
    expect(c.keep(other, 'k2', answer('other'))).toBe(true);
    expect(c.get('k-old')).toBeUndefined();
  });

  it('does not keep an answer fetched across a clear (a write through this gateway)', () => {
    const { c } = cache();
    c.keep(c.begin('a1'), 'k1', answer('x'));
    const inFlight = c.begin('a2');
    c.clear();
    expect(c.get('k1')).toBeUndefined();
    expect(c.keep(inFlight, 'k2', answer('y'))).toBe(false);
    expect(c.keep(c.begin('a2'), 'k2', answer('z'))).toBe(true);
  });

  it('gives up its oldest answers past maxBytes and keeps no body larger than maxEntryBytes', () => {
    const { c } = cache({ maxBytes: 300, maxEntryBytes: 200 });
    c.keep(c.begin('a1'), 'k1', answer('1'.repeat(100)));
    c.keep(c.begin('a2'), 'k2', answer('2'.repeat(100)));
    c.keep(c.begin('a3'), 'k3', answer('3'.repeat(100)));
    expect(c.get('k1')).toBeUndefined();
    expect(c.get('k2')).toBeDefined();
    expect(c.get('k3')).toBeDefined();
    expect(c.stats().bytes).toBeLessThanOrEqual(300);
    expect(c.keep(c.begin('a4'), 'k4', answer('4'.repeat(250)))).toBe(false);
    // Replacing an answer under the same key counts its bytes once.
    c.keep(c.begin('a3'), 'k3', answer('5'.repeat(100)));
    expect(c.stats()).toMatchObject({ entries: 2, bytes: 2 * 102 });
  });

  it('forgets fetches once they end (no bookkeeping left behind)', () => {
    const { c } = cache();
    for (let i = 0; i < 100; i += 1) c.keep(c.begin(`a${i}`), `k${i}`, undefined);
    c.invalidate('a1');
    expect((c as unknown as { fetches: Map<string, unknown> }).fetches.size).toBe(0);
  });
});
