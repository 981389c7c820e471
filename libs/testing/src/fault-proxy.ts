import net from 'node:net';
import { onProcessExit } from './cleanup';
import { freePort } from './free-port';

/** What the proxy does with traffic: forward it, refuse it (the server is down), hold it unanswered, or slow it. */
export type FaultMode = { kind: 'pass' } | { kind: 'down' } | { kind: 'blackhole' } | { kind: 'delay'; ms: number };

/**
 * A TCP proxy in front of a dependency (PostgreSQL, the S3 server) that a test turns faulty: `down()` drops every
 * connection and refuses new ones (as a stopped server does), `blackhole()` accepts and forwards nothing in either
 * direction, holding it until traffic passes again (a hung server, a partition), `delay(ms)` holds every chunk that long. The services see a real socket
 * to a real server that misbehaves; nothing in them is mocked.
 */
export interface FaultProxy {
  /** The proxy's own address (what the services are given instead of the server's). */
  host: string;
  port: number;
  mode(): FaultMode;
  pass(): Promise<void>;
  down(): Promise<void>;
  blackhole(): void;
  delay(ms: number): void;
  /** Client connections open now, and the most open at once since the last reset. */
  connections(): { open: number; peak: number };
  resetPeak(): void;
  stop(): Promise<void>;
}

export async function startFaultProxy(target: { host: string; port: number }): Promise<FaultProxy> {
  const port = await freePort();
  const host = '127.0.0.1';
  let mode: FaultMode = { kind: 'pass' };
  const open = new Set<net.Socket>();
  /** Chunks held by blackhole(), each with its socket paused: delivered in order once traffic passes again. */
  const held = new Set<() => void>();
  let peak = 0;

  const server = net.createServer((client) => {
    open.add(client);
    peak = Math.max(peak, open.size);
    const upstream = net.connect(target.port, target.host);
    const pair = [client, upstream] as const;
    const close = () => {
      open.delete(client);
      for (const s of pair) s.destroy();
    };
    for (const s of pair) {
      s.on('error', close);
      s.on('close', close);
    }
    const forward = (from: net.Socket, to: net.Socket) => {
      const deliver = (chunk: Buffer): void => {
        const now = mode;
        if (now.kind === 'blackhole') {
          // Held, not dropped (a hung peer: the bytes wait in the socket buffers and the sender is blocked).
          from.pause();
          const release = () => {
            held.delete(release);
            deliver(chunk);
          };
          held.add(release);
          return;
        }
        if (now.kind === 'delay') {
          // Ordered: every chunk waits the same time, so they leave in the order they came.
          from.pause();
          setTimeout(() => {
            if (!to.destroyed) to.write(chunk);
            from.resume();
          }, now.ms);
          return;
        }
        if (!to.write(chunk)) {
          from.pause();
          to.once('drain', () => from.resume());
        } else if (from.isPaused()) from.resume();
      };
      from.on('data', deliver);
    };
    forward(client, upstream);
    forward(upstream, client);
  });
  const listen = () =>
    new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
  await listen();
  const listening = () => server.listening;
  const dropAll = () => {
    for (const s of open) s.destroy();
    open.clear();
    held.clear();
  };
  const removeExitHandler = onProcessExit(() => {
    dropAll();
    server.close();
  });

  return {
    host,
    port,
    mode: () => mode,
    async pass() {
      mode = { kind: 'pass' };
      for (const release of [...held]) release();
      if (!listening()) await listen();
    },
    async down() {
      mode = { kind: 'down' };
      // Refused from now on (ECONNREFUSED), and what was open is reset, as when the server process dies.
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      dropAll();
      await closed;
    },
    blackhole() {
      mode = { kind: 'blackhole' };
    },
    delay(ms) {
      mode = { kind: 'delay', ms };
    },
    connections: () => ({ open: open.size, peak }),
    resetPeak() {
      peak = open.size;
    },
    async stop() {
      removeExitHandler();
      dropAll();
      if (listening()) await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
