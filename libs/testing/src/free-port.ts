import { readFileSync } from 'node:fs';
import net from 'node:net';

/**
 * Where free ports are looked for: below the kernel's ephemeral range (outbound connections take their local
 * ports there, so a port picked inside it can be taken by any connection before the server under test binds it,
 * which made tests fail with EADDRINUSE), and within that, a slice of its own for each jest worker (and one for
 * the global setup): two workers each checked that a port was free and handed it out, and the server started
 * second failed with EADDRINUSE (a service that loads models binds its port seconds after the check).
 */
export function portRange(ephemeralLow: number, workerId: string | undefined): [number, number] {
  const high = Math.min(ephemeralLow, 32768);
  const low = Math.max(1024, high - 12_000);
  const worker = Number(workerId);
  const slice = Number.isInteger(worker) && worker > 0 ? 1 + ((worker - 1) % (SLICES - 1)) : 0;
  const size = Math.floor((high - low) / SLICES);
  return [low + slice * size, low + (slice + 1) * size];
}
const SLICES = 5;

function ephemeralLow(): number {
  try {
    const [low] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    if (low !== undefined && Number.isInteger(low)) return low;
  } catch {
    // Not Linux: the usual default.
  }
  return 32768;
}
const [LOW, HIGH] = portRange(ephemeralLow(), process.env.JEST_WORKER_ID);

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
 * A TCP port free on 127.0.0.1 right now, chosen at random in this process's slice below the ephemeral range and
 * never handed out twice by it; a race remains only with a process outside jest's workers.
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
