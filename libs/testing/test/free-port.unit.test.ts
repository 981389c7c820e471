import net from 'node:net';
import { freePort, portRange } from '../src/free-port';

describe('freePort', () => {
  it('hands out distinct bindable ports below the ephemeral range (where outbound connections cannot take them)', async () => {
    const ports = await Promise.all(Array.from({ length: 20 }, () => freePort()));
    expect(new Set(ports).size).toBe(20);
    for (const port of ports) expect(port).toBeLessThan(32768);
    const server = net.createServer();
    await new Promise<void>((resolve, reject) => server.once('error', reject).listen(ports[0], '127.0.0.1', resolve));
    await new Promise((resolve) => server.close(resolve));
  });
});

describe('portRange', () => {
  const overlaps = (a: [number, number], b: [number, number]) => a[0] < b[1] && b[0] < a[1];

  it('gives each jest worker, and the global setup, its own slice below the ephemeral range', () => {
    const setup = portRange(32768, undefined);
    const workers = ['1', '2', '3', '4'].map((id) => portRange(32768, id));
    const all = [setup, ...workers];
    for (const [low, high] of all) {
      expect(low).toBeGreaterThanOrEqual(1024);
      expect(high).toBeLessThanOrEqual(32768);
      expect(high - low).toBeGreaterThanOrEqual(2000);
    }
    for (let i = 0; i < all.length; i += 1) for (let j = i + 1; j < all.length; j += 1) expect(overlaps(all[i]!, all[j]!)).toBe(false);
  });

  it('stays below a lowered ephemeral range, and wraps worker ids past the slices', () => {
    expect(portRange(10000, '2')[1]).toBeLessThanOrEqual(10000);
    expect(portRange(32768, '5')).toEqual(portRange(32768, '1'));
    expect(portRange(32768, 'x')).toEqual(portRange(32768, undefined));
  });
});
