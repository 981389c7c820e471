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

  it('are the five that own one', () => {
    expect([...new Set(calls.map((c) => c.service))].sort()).toEqual(['addon', 'auth', 'metadata', 'search', 'webhook']);
  });

  it('size every pool from their config (DB_POOL_MAX), and their config reads it', () => {
    expect(calls.filter((c) => c.arg !== 'config')).toEqual([]);
    for (const service of new Set(calls.map((c) => c.service))) {
      expect({ service, dbEnv: readFileSync(path.join(services, service, 'src', 'config.ts'), 'utf8').includes('...dbEnv') }).toEqual({ service, dbEnv: true });
    }
  });
});
