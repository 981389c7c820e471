import { Writable } from 'node:stream';
import { createLogger } from '@dam/logging';
import { checkWorkers, createHttpApp, finishApp, runService, type Worker } from '../src';

const logger = createLogger({ service: 'test', destination: new Writable({ write: (_c, _e, cb) => cb() }) });

const consumer = (durable: string, subjects: string[], log: string[] = [], stream = 'S'): Worker => ({
  kind: 'consumer',
  durable,
  stream,
  subjects,
  start: async () => {
    log.push(`start ${durable}`);
    return { stop: async () => void log.push(`stop ${durable}`) };
  },
});

describe('checkWorkers', () => {
  it('refuses two consumers on one durable, and two handlers of one subject', () => {
    expect(() => checkWorkers([consumer('a', ['x.1']), consumer('a', ['x.2'])])).toThrow(/two workers are declared as consumer:a/);
    expect(() => checkWorkers([consumer('a', ['x.>']), consumer('b', ['x.>'])])).toThrow(/subject x\.> of S has two handlers/);
    // The same subject on two streams, or distinct subjects, are fine.
    expect(() => checkWorkers([consumer('a', ['x.>']), consumer('b', ['x.>'], [], 'T'), consumer('c', ['y.>'])])).not.toThrow();
    expect(() =>
      checkWorkers([
        { kind: 'poller', name: 'p', start: () => ({ stop: async () => undefined }) },
        { kind: 'poller', name: 'p', start: () => ({ stop: async () => undefined }) },
      ]),
    ).toThrow(/poller:p/);
  });
});

describe('runService', () => {
  it('starts the workers, reports them in /readyz with the checks, and stops them in order before closing resources in reverse', async () => {
    const log: string[] = [];
    const served = await runService({
      logger,
      host: '127.0.0.1',
      port: 0,
      checks: { db: async () => true, broken: async () => Promise.reject(new Error('down')) },
      workers: [consumer('first', ['a'], log), { kind: 'poller', name: 'relay', start: () => ({ stop: async () => void log.push('stop relay') }) }],
      resources: [
        { name: 'telemetry', close: async () => void log.push('close telemetry') },
        { name: 'pool', close: async () => void log.push('close pool') },
      ],
      app: (readiness) => finishApp(createHttpApp({ logger, readiness }), logger),
    });
    try {
      const res = await fetch(`http://127.0.0.1:${served.port}/readyz`);
      expect(res.status).toBe(503); // `broken` is down
      expect(((await res.json()) as { checks: unknown }).checks).toEqual({ db: true, broken: false, 'consumer:first': true, 'poller:relay': true });
    } finally {
      await served.close();
    }
    expect(log).toEqual(['start first', 'stop first', 'stop relay', 'close pool', 'close telemetry']);
  });

  it('answers 200 "degraded" while only a degraded check fails (NATS), and 503 "unavailable" once a deciding one fails too', async () => {
    const up = { db: true, nats: true };
    const served = await runService({
      logger,
      host: '127.0.0.1',
      port: 0,
      checks: { db: async () => up.db },
      degradedChecks: { nats: async () => (up.nats ? true : Promise.reject(new Error('no responders'))) },
      workers: [consumer('first', ['a'])],
      app: (readiness) => finishApp(createHttpApp({ logger, readiness }), logger),
    });
    const readyz = async () => {
      const res = await fetch(`http://127.0.0.1:${served.port}/readyz`);
      return { status: res.status, body: (await res.json()) as unknown };
    };
    try {
      expect(await readyz()).toEqual({ status: 200, body: { status: 'ok', checks: { db: true, nats: true, 'consumer:first': true } } });
      up.nats = false;
      // The pod stays in its Service: its routes serve without NATS; the body still names the check that fails.
      expect(await readyz()).toEqual({ status: 200, body: { status: 'degraded', checks: { db: true, nats: false, 'consumer:first': true } } });
      up.db = false;
      expect(await readyz()).toEqual({ status: 503, body: { status: 'unavailable', checks: { db: false, nats: false, 'consumer:first': true } } });
      up.nats = true;
      expect(await readyz()).toEqual({ status: 503, body: { status: 'unavailable', checks: { db: false, nats: true, 'consumer:first': true } } });
    } finally {
      await served.close();
    }
  });

  it('refuses to start with conflicting workers, starting none of them', async () => {
    const log: string[] = [];
    await expect(
      runService({ logger, host: '127.0.0.1', port: 0, workers: [consumer('a', ['s'], log), consumer('b', ['s'], log)], app: () => createHttpApp({ logger }) }),
    ).rejects.toThrow(/two handlers/);
    expect(log).toEqual([]);
  });
});
