import { createLogger } from '@dam/logging';
import { startPoller } from '../src/poller';

const logger = createLogger({ service: 'poller-test', level: 'silent' });

describe('startPoller', () => {
  it('runs at start and on its interval, never two passes at once, and stop waits for the pass in flight', async () => {
    let running = 0;
    let most = 0;
    let passes = 0;
    let finished = 0;
    const poller = startPoller({
      name: 't',
      intervalMs: 5,
      logger,
      run: async () => {
        running++;
        passes++;
        most = Math.max(most, running);
        await new Promise((r) => setTimeout(r, 30));
        running--;
        finished++;
      },
    });
    // Two passes (30 ms each, 5 ms apart) take about 65 ms: waited for rather than assumed within a fixed 100 ms.
    for (const until = Date.now() + 10_000; passes < 2 && Date.now() < until;) await new Promise((r) => setTimeout(r, 10));
    await poller.stop();
    expect(passes).toBeGreaterThanOrEqual(2);
    expect(most).toBe(1);
    expect(finished).toBe(passes);
    const after = passes;
    await new Promise((r) => setTimeout(r, 30));
    expect(passes).toBe(after);
  });

  it('keeps going after a failed pass, and runOnce runs one now', async () => {
    let calls = 0;
    const poller = startPoller({
      name: 't',
      intervalMs: 60_000,
      logger,
      runAtStart: false,
      run: async () => {
        calls++;
        if (calls === 1) throw new Error('boom');
      },
    });
    await expect(poller.runOnce()).resolves.toBeUndefined();
    await poller.runOnce();
    expect(calls).toBe(2);
    await poller.stop();
  });

  it('runs a last pass when stopped, with runAtStop, and none without', async () => {
    let passes = 0;
    const run = async () => {
      passes++;
    };
    const flushing = startPoller({ name: 'f', intervalMs: 60_000, logger, runAtStart: false, runAtStop: true, run });
    await flushing.stop();
    expect(passes).toBe(1);
    const plain = startPoller({ name: 'p', intervalMs: 60_000, logger, runAtStart: false, run });
    await plain.stop();
    expect(passes).toBe(1);
  });

  it('wake runs a pass at once, or one more after the running pass however often it is called, and nothing once stopped', async () => {
    let passes = 0;
    let release = (): void => undefined;
    const poller = startPoller({
      name: 'w',
      intervalMs: 60_000,
      logger,
      runAtStart: false,
      run: async () => {
        passes++;
        if (passes === 1) await new Promise<void>((r) => (release = r));
      },
    });
    poller.wake();
    expect(passes).toBe(1);
    for (let i = 0; i < 5; i++) poller.wake();
    release();
    for (const until = Date.now() + 10_000; passes < 2 && Date.now() < until;) await new Promise((r) => setTimeout(r, 5));
    await new Promise((r) => setTimeout(r, 20));
    expect(passes).toBe(2);
    await poller.stop();
    poller.wake();
    expect(passes).toBe(2);
  });
});
