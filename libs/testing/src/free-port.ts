import { readFileSync } from 'node:fs';
import net from 'node:net';

/**
 * Where free ports are looked for: below the kernel's ephemeral range (outbound connections take their local
 * ports there, so a port picked inside it can be taken by any connection before the server under test binds it,
 * which made tests fail with EADDRINUSE).
 */
function pickRange(): [number, number] {
  let ephemeralLow = 32768;
  try {
    const [low] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    if (low !== undefined && Number.isInteger(low)) ephemeralLow = low;
  } catch {
    // Not Linux: the usual default.
  }
  const high = Math.min(ephemeralLow, 32768);
  return [Math.max(1024, high - 12_000), high];
}
const [LOW, HIGH] = pickRange();

function canBind(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

function osPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      if (address === null || typeof address === 'string') {
        server.close();
        reject(new Error('freePort: no address'));
        return;
      }
      server.close(() => resolve(address.port));
    });
  });
}

const handedOut = new Set<number>();

/**
 * A TCP port free on 127.0.0.1 right now, chosen at random below the ephemeral range and never handed out twice
 * by this process; a race remains only with another test process picking the same port in the same instant.
 */
export async function freePort(): Promise<number> {
  for (let i = 0; i < 50; i += 1) {
    const port = LOW + Math.floor(Math.random() * (HIGH - LOW));
    if (handedOut.has(port)) continue;
    handedOut.add(port);
    if (await canBind(port)) return port;
    handedOut.delete(port);
  }
  return osPort();
}
