import { startServiceProcess, type ServiceProcess } from '@dam/testing';

// The services that answer only their health endpoints so far; one file checks the start/stop contract of all.
const STUBS = ['addon'];

describe('health-only service stubs', () => {
  const running: ServiceProcess[] = [];

  afterAll(async () => {
    await Promise.all(running.map((s) => s.stop()));
  }, 30_000);

  it.each(STUBS)('%s answers /healthz and /readyz, and exits 0 on SIGTERM', async (name) => {
    const service = await startServiceProcess(name, {});
    running.push(service);

    for (const path of ['/healthz', '/readyz']) {
      const res = await fetch(`${service.url}${path}`);
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ status: 'ok' });
    }
    const missing = await fetch(`${service.url}/nothing-here`);
    expect(missing.status).toBe(404);

    service.kill('SIGTERM');
    await expect(service.exited).resolves.toEqual({ code: 0, signal: null });
  }, 60_000);
});
