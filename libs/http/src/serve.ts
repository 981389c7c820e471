import type { Server } from 'node:http';
import type { Express } from 'express';
import type { Logger } from '@dam/logging';

export interface ServeOptions {
  host: string;
  port: number;
  logger: Logger;
  /** Runs after the server stops accepting requests: stop consumers, close pools. */
  onShutdown?: () => Promise<void>;
  shutdownTimeoutMs?: number;
}

export interface Served {
  server: Server;
  port: number;
  close(): Promise<void>;
}

/** Listens and installs SIGTERM/SIGINT handling: stop taking work, finish in-flight requests, close, exit. */
export async function serve(app: Express, opts: ServeOptions): Promise<Served> {
  const server = app.listen(opts.port, opts.host);
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : opts.port;
  opts.logger.info({ host: opts.host, port }, 'listening');

  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      // In-flight requests finish first: onShutdown closes the pools and consumers they may still use.
      const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
      // Keep-alive connections busy at close time turn idle later: sweep them so the drain ends promptly.
      server.closeIdleConnections();
      const sweep = setInterval(() => server.closeIdleConnections(), 200);
      await stopped.finally(() => clearInterval(sweep));
      await opts.onShutdown?.();
    })();
    return closing;
  };

  const onSignal = (signal: string) => {
    opts.logger.info({ signal }, 'shutting down');
    const timer = setTimeout(() => {
      opts.logger.error('shutdown timed out; exiting');
      server.closeAllConnections();
      process.exit(1);
    }, opts.shutdownTimeoutMs ?? 10000);
    timer.unref();
    close().then(
      () => {
        opts.logger.info('shutdown complete');
        process.exit(0);
      },
      (err: unknown) => {
        opts.logger.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', () => onSignal('SIGTERM'));
  process.once('SIGINT', () => onSignal('SIGINT'));
  return { server, port, close };
}
