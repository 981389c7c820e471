import net from 'node:net';
import { freePort } from '../src/free-port';

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
