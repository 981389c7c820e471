import { spawn } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createDatabase } from '@dam/testing';
import { createPool, migrate, withTransaction, type Pool } from '../src';

let pool: Pool;

beforeAll(async () => {
  pool = createPool(await createDatabase('db'));
});
afterAll(async () => {
  await pool.end();
});

describe('migrate', () => {
  it('applies each migration once, in order, and skips applied ones', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'mig-'));
    await writeFile(path.join(dir, '001_a.sql'), 'CREATE TABLE a (id int);');
    await writeFile(path.join(dir, '002_b.sql'), 'INSERT INTO a VALUES (1);');
    await writeFile(path.join(dir, 'notes.txt'), 'ignored');
    const [first, second] = await Promise.all([migrate(pool, dir), migrate(pool, dir)]);
    expect([...first, ...second].sort()).toEqual(['001_a.sql', '002_b.sql']);
    expect(await migrate(pool, dir)).toEqual([]);
    expect((await pool.query('SELECT count(*)::int AS n FROM a')).rows[0].n).toBe(1);
  });

  it('rolls back a failing migration and names it', async () => {
    await expect(migrate(pool, [{ name: '100_bad.sql', sql: 'CREATE TABLE bad (id int); SELECT nope;' }])).rejects.toThrow('100_bad.sql');
    const exists = await pool.query("SELECT to_regclass('bad') AS t");
    expect(exists.rows[0].t).toBeNull();
  });
});

describe('withTransaction', () => {
  it('commits on success and rolls back on error', async () => {
    await pool.query('CREATE TABLE t (v int)');
    await withTransaction(pool, (c) => c.query('INSERT INTO t VALUES (1)'));
    await expect(
      withTransaction(pool, async (c) => {
        await c.query('INSERT INTO t VALUES (2)');
        throw new Error('no');
      }),
    ).rejects.toThrow('no');
    expect((await pool.query('SELECT array_agg(v) AS v FROM t')).rows[0].v).toEqual([1]);
  });
});

describe('a connection the server ends', () => {
  it("fails the checked-out client's next query instead of crashing the process, and the pool replaces it", async () => {
    // A client checked out between two queries (a transaction waiting on something else, the outbox relay awaiting
    // NATS acks) when PostgreSQL stops or restarts: node-postgres emits 'error' on it, with no listener of its own.
    const client = await pool.connect();
    const pid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]?.pid;
    const ended = new Promise((resolve) => client.once('end', resolve));
    await pool.query('SELECT pg_terminate_backend($1)', [pid]);
    await ended;
    await expect(client.query('SELECT 1')).rejects.toThrow();
    client.release();
    expect((await pool.query<{ ok: number }>('SELECT 1 AS ok')).rows[0]?.ok).toBe(1);
  });
});

describe("migrate-cli (the init container of a service's pod)", () => {
  const run = (args: string[], env: Record<string, string>) =>
    new Promise<{ code: number | null; out: string }>((resolve) => {
      const child = spawn(process.execPath, ['--import', 'tsx', path.join(__dirname, '..', 'src', 'migrate-cli.ts'), ...args], {
        env: { ...process.env, ...env },
      });
      let out = '';
      child.stdout.on('data', (c: Buffer) => (out += c.toString()));
      child.stderr.on('data', (c: Buffer) => (out += c.toString()));
      child.on('close', (code) => resolve({ code, out }));
    });

  it("applies a service's migrations once however often and however many at once, and refuses what it cannot do", async () => {
    const url = await createDatabase('migratecli');
    const [a, b] = await Promise.all([run(['search'], { DATABASE_URL: url }), run(['search'], { DATABASE_URL: url })]);
    expect([a.code, b.code]).toEqual([0, 0]);
    const again = await run(['search'], { DATABASE_URL: url });
    expect(again).toMatchObject({ code: 0, out: expect.stringContaining('"applied":[]') });
    const check = createPool(url);
    const { rows } = await check.query<{ n: number }>('SELECT count(*)::int AS n FROM schema_migrations');
    await check.end();
    expect(rows[0]?.n).toBeGreaterThan(0);
    expect(await run(['nonexistent'], { DATABASE_URL: url })).toMatchObject({ code: 1, out: expect.stringContaining('no migrations for service') });
    expect(await run(['search'], { DATABASE_URL: '' })).toMatchObject({ code: 1, out: expect.stringContaining('DATABASE_URL') });
  });
});
