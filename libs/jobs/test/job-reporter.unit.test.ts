import type { JetStreamClient } from '@nats-io/jetstream';
import type { JobCommand } from '@dam/events';
import { startJobReporter } from '../src';

// The reporter's pacing, with the clock faked and the stream client replaced by a recorder of what is published.
const command = { job_id: 7, attempt: 0, group_id: '1', asset_id: 'a1', type: 'conversions' } as unknown as JobCommand;
const logger = { warn: jest.fn(), info: jest.fn(), error: jest.fn(), debug: jest.fn() };

function recorder() {
  const sent: Array<{ state: string; progress: number; step: string; at: number; started_at?: string }> = [];
  const js = {
    publish: async (_subject: string, data: string) => {
      const r = JSON.parse(data) as { state: string; progress: number; step: string; started_at?: string };
      sent.push({ state: r.state, progress: r.progress, step: r.step, at: Date.now(), ...(r.started_at ? { started_at: r.started_at } : {}) });
      return { seq: sent.length, stream: 'DAM_INTERNAL', duplicate: false };
    },
  } as unknown as JetStreamClient;
  return { js, sent };
}

beforeEach(() => jest.useFakeTimers({ now: 1_000_000 }));
afterEach(() => jest.useRealTimers());

describe('job reporter', () => {
  it("publishes on its worker kind's own report subject, and refuses a holder id of no worker kind", async () => {
    const subjects: string[] = [];
    const js = {
      publish: async (subject: string) => (subjects.push(subject), { seq: 1, stream: 'DAM_INTERNAL', duplicate: false }),
    } as unknown as JetStreamClient;
    const r = startJobReporter({
      js,
      command,
      worker: 'addon@t:1',
      step: 's',
      pacing: { heartbeatMs: 10_000, progressIntervalMs: 500, startDelayMs: 0 },
      logger,
    });
    await r.finish('COMPLETED');
    expect(new Set(subjects)).toEqual(new Set(['dam.internal.jobs.reports.addon']));
    expect(() =>
      startJobReporter({ js, command, worker: 'w', step: 's', pacing: { heartbeatMs: 10_000, progressIntervalMs: 500, startDelayMs: 0 }, logger }),
    ).toThrow(/worker kind/);
  });

  it('sends STARTED at once and the final report, and no PROGRESS for a job done within the interval', async () => {
    const { js, sent } = recorder();
    const r = startJobReporter({
      js,
      command,
      worker: 'conversion@t:1',
      step: 'conversions',
      pacing: { heartbeatMs: 10_000, progressIntervalMs: 500, startDelayMs: 0 },
      logger,
    });
    r.progress(1, 3);
    await jest.advanceTimersByTimeAsync(100);
    r.progress(2, 3);
    await jest.advanceTimersByTimeAsync(100);
    await r.finish('COMPLETED');
    await jest.advanceTimersByTimeAsync(2_000);
    expect(sent.map((s) => [s.state, s.progress])).toEqual([
      ['STARTED', 0],
      ['COMPLETED', 100],
    ]);
  });

  it('sends the latest progress at most once an interval, moving forward, a new step and a change after a quiet interval at once', async () => {
    const { js, sent } = recorder();
    const r = startJobReporter({
      js,
      command,
      worker: 'conversion@t:1',
      step: 'preprocess',
      pacing: { heartbeatMs: 10_000, progressIntervalMs: 500, startDelayMs: 0 },
      logger,
    });
    for (let i = 1; i <= 20; i++) {
      r.progress(i, 40);
      await jest.advanceTimersByTimeAsync(100);
    }
    r.step('transcodes');
    await jest.advanceTimersByTimeAsync(2_000);
    r.progress(30, 40);
    await r.finish('COMPLETED');
    const progress = sent.filter((s) => s.state === 'PROGRESS');
    // Two seconds of changes every 100 ms: a report each 500 ms with what was true then; a step change goes at
    // once (2,000 ms), and so does a change after a quiet interval (4,000 ms).
    expect(progress.map((s) => s.at - 1_000_000)).toEqual([500, 1000, 1500, 2000, 2000, 4000]);
    expect(progress.map((s) => s.progress)).toEqual([12, 25, 37, 50, 50, 75]);
    expect(progress.map((s) => s.step)).toEqual(['preprocess', 'preprocess', 'preprocess', 'preprocess', 'transcodes', 'transcodes']);
    expect(sent.at(-1)).toMatchObject({ state: 'COMPLETED', progress: 100 });
  });

  it('keeps the lease with heartbeats while nothing changes', async () => {
    const { js, sent } = recorder();
    const r = startJobReporter({
      js,
      command,
      worker: 'conversion@t:1',
      step: 's',
      pacing: { heartbeatMs: 1_000, progressIntervalMs: 500, startDelayMs: 0 },
      logger,
    });
    await jest.advanceTimersByTimeAsync(3_500);
    r.stop();
    await jest.advanceTimersByTimeAsync(3_000);
    expect(sent.map((s) => s.state)).toEqual(['STARTED', 'PROGRESS', 'PROGRESS', 'PROGRESS']);
  });

  it('with a start delay, sends only the final report (saying when the work started) for a job done sooner', async () => {
    const { js, sent } = recorder();
    const r = startJobReporter({
      js,
      command,
      worker: 'conversion@t:1',
      step: 'conversions',
      pacing: { heartbeatMs: 10_000, progressIntervalMs: 0, startDelayMs: 1_000 },
      logger,
    });
    r.progress(1, 2);
    r.step('addons');
    await jest.advanceTimersByTimeAsync(900);
    await r.finish('COMPLETED');
    await jest.advanceTimersByTimeAsync(5_000);
    expect(sent).toEqual([{ state: 'COMPLETED', progress: 100, step: 'addons', at: 1_000_900, started_at: new Date(1_000_000).toISOString() }]);
  });

  it('with a start delay, a longer job reports STARTED at the delay with what changed meanwhile, then as usual', async () => {
    const { js, sent } = recorder();
    const r = startJobReporter({
      js,
      command,
      worker: 'conversion@t:1',
      step: 'preprocess',
      pacing: { heartbeatMs: 3_000, progressIntervalMs: 500, startDelayMs: 1_000 },
      logger,
    });
    r.progress(1, 4);
    r.step('transcodes');
    await jest.advanceTimersByTimeAsync(1_000);
    r.progress(2, 4);
    await jest.advanceTimersByTimeAsync(3_000);
    await r.finish('FAILED', { error: 'no' });
    expect(sent.map((s) => [s.state, s.step, s.progress, s.at - 1_000_000])).toEqual([
      ['STARTED', 'transcodes', 25, 1_000],
      ['PROGRESS', 'transcodes', 50, 1_500],
      ['PROGRESS', 'transcodes', 50, 3_000],
      ['FAILED', 'transcodes', 100, 4_000],
    ]);
    expect(sent.at(-1)?.started_at).toBe(new Date(1_000_000).toISOString());
  });

  it('with a heartbeat shorter than the start delay, the first heartbeat is the STARTED report', async () => {
    const { js, sent } = recorder();
    const r = startJobReporter({
      js,
      command,
      worker: 'conversion@t:1',
      step: 's',
      pacing: { heartbeatMs: 400, progressIntervalMs: 500, startDelayMs: 1_000 },
      logger,
    });
    await jest.advanceTimersByTimeAsync(900);
    r.stop();
    await jest.advanceTimersByTimeAsync(3_000);
    expect(sent.map((s) => [s.state, s.at - 1_000_000])).toEqual([
      ['STARTED', 400],
      ['PROGRESS', 800],
    ]);
  });
});
