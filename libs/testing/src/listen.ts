import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Starts an HTTP server on a free loopback port; resolves its base URL. */
export function listen(server: Server): Promise<string> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)));
}
