import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

// Every pool a service opens is sized by its own DB_POOL_MAX (issue 31, review D10): createPool gets the service's
// config (DATABASE_URL and DB_POOL_MAX, see pool-size.int.test.ts), never the bare URL, which means 10 connections.

const services = path.resolve(__dirname, '..', '..', '..', 'services');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const file = path.join(dir, e.name);
    if (e.isDirectory()) return sources(file);
    return e.name.endsWith('.ts') ? [file] : [];
  });
}

describe('the services that own a database', () => {
  const calls = readdirSync(services).flatMap((service) => {
    const src = path.join(services, service, 'src');
    let files: string[];
    try {
      files = sources(src);
    } catch {
      return [];
    }
    return files.flatMap((file) =>
      [...readFileSync(file, 'utf8').matchAll(/\bcreatePool\(([^)]*)\)/g)].map((m) => ({ service, file: path.relative(services, file), arg: m[1] })),
    );
  });

  it('are the seven that own one', () => {
    // gateway and upload since issue 35 (Idempotency-Key answers, upload's pending journal).
    expect([...new Set(calls.map((c) => c.service))].sort()).toEqual(['addon', 'auth', 'gateway', 'metadata', 'search', 'upload', 'webhook']);
  });

  it('size every pool from their config (DB_POOL_MAX), and their config reads it', () => {
    // The config itself, or (the gateway, whose DATABASE_URL is optional) its DB_POOL_MAX passed on by name.
    expect(calls.filter((c) => c.arg !== 'config' && !/\bDB_POOL_MAX: config\.DB_POOL_MAX\b/.test(c.arg ?? ''))).toEqual([]);
    for (const service of new Set(calls.map((c) => c.service))) {
      const config = readFileSync(path.join(services, service, 'src', 'config.ts'), 'utf8');
      expect({ service, dbEnv: config.includes('...dbEnv') || config.includes('dbEnv.DB_POOL_MAX') }).toEqual({ service, dbEnv: true });
    }
  });
});
