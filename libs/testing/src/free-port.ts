import net from 'node:net';

/** A TCP port free on 127.0.0.1 right now (the OS picks it; a small race remains until the caller binds). */
export function freePort(): Promise<number> {
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
