import type { Server } from 'node:http';
import type { Duplex } from 'node:stream';
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

const PARSER_ERRORS: Record<string, [number, string, string, string]> = {
  HPE_HEADER_OVERFLOW: [431, 'Request Header Fields Too Large', 'HEADERS_TOO_LARGE', 'The request headers are too large'],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'Request Timeout', 'REQUEST_TIMEOUT', 'The request took too long to arrive'],
};

/**
 * Requests Node's HTTP parser refuses (bad Content-Length, oversized headers, malformed request lines) never
 * reach express: answer them with the contract's error body instead of Node's bare `400 Bad Request`.
 */
export function answerParserErrors(server: Server, logger?: Logger): void {
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    if (err.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    const [status, reason, code, message] = PARSER_ERRORS[err.code ?? ''] ?? [400, 'Bad Request', 'BAD_REQUEST', 'The request is malformed'];
    logger?.debug({ code: err.code }, 'malformed request refused by the HTTP parser');
    const body = JSON.stringify({ error: { code, message } });
    socket.end(
      `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
        `X-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n${body}`,
    );
  });
}

/** Listens and installs SIGTERM/SIGINT handling: stop taking work, finish in-flight requests, close, exit. */
export async function serve(app: Express, opts: ServeOptions): Promise<Served> {
  const server = app.listen(opts.port, opts.host);
  // The server keeps an idle kept-alive connection longer than any client of it (the gateway's agent 4 s, undici's
  // 4 s, load balancers 60 s): with Node's 5 s, a request sent as the server closed the connection failed with
  // ECONNRESET (seen under load by bench/load.bench.ts, upload → metadata with its event loop 2 s behind).
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  answerParserErrors(server, opts.logger);
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
