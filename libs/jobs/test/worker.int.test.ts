import { jetstream, type JetStreamClient } from '@nats-io/jetstream';
import type { NatsConnection, Subscription } from '@nats-io/nats-core';
import {
  connectNats,
  ensureStreams,
  jobCommand,
  publishEvent,
  type Consumer,
  type EventLogger,
  type JobCommand,
  type JobReport,
  type JobWorker,
} from '@dam/events';
import { scaled, startNats, type TestNats } from '@dam/testing';
import { jobWorker, type JobHandler, type JobRuntime } from '../src';

/**
 * The declared worker runtime against a real nats-server: a worker kind declares only what it does with one job; the
 * runtime takes the commands, paces the reports and ends the job once every delivery failed.
 */
let server: TestNats;
let nc: NatsConnection;
let js: JetStreamClient;
const consumers: Consumer[] = [];
const subs: Subscription[] = [];
const silent: EventLogger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };

beforeAll(async () => {
  server = await startNats();
  nc = await connectNats(server.url, 'jobs-test', server.seed('admin'));
  await ensureStreams(nc);
  js = jetstream(nc);
});
afterEach(async () => {
  await Promise.all(consumers.splice(0).map((c) => c.stop()));
  for (const s of subs.splice(0)) s.unsubscribe();
});
afterAll(async () => {
  await nc.drain();
  await server.stop();
});

let seq = 0;
/** A worker kind of its own per test (each has its own command subject and durable), and its reports as they come. */
async function start(worker: JobWorker, handler: Omit<JobHandler, 'worker' | 'durable'>, options: Partial<JobRuntime> = {}) {
  seq += 1;
  const reports: JobReport[] = [];
  const sub = nc.subscribe(`dam.internal.jobs.reports.${worker}`);
  subs.push(sub);
  void (async () => {
    for await (const m of sub) reports.push(m.json<JobReport>());
  })();
  const runtime: JobRuntime = {
    nc,
    js,
    logger: silent,
    pacing: { heartbeatMs: 60_000, progressIntervalMs: 0, startDelayMs: 0 },
    concurrency: 2,
    ackWaitMs: 30_000,
    maxDeliver: 3,
    backoffMs: [50],
    outageRetryMs: 0,
    ...options,
  };
  consumers.push(await jobWorker({ worker, durable: `jobs-test-${seq}`, ...handler }, runtime).start());
  const send = async (jobId: number, extra: Partial<JobCommand> = {}) => {
    const command: JobCommand = {
      id: `job-${jobId}-run-0`,
      job_id: jobId,
      attempt: 0,
      type: 'processing',
      group_id: '1',
      asset_id: `a${jobId}`,
      source_checksum: 'c',
      content_type: 'image/png',
      ...extra,
    };
    const commands = jobCommand(worker);
    await publishEvent(js, commands.subject, commands.schema, command, { msgId: command.id });
  };
  return { reports, send };
}

async function until(check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + scaled(timeoutMs);
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}
const finals = (reports: JobReport[]) => reports.filter((r) => r.state === 'COMPLETED' || r.state === 'FAILED');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('a declared job worker', () => {
  it('reports the start, each step and progress, then the end its handler returns, with the fixed final id', async () => {
    const after: string[] = [];
    const { reports, send } = await start('conversion', {
      firstStep: () => 'preprocess',
      noun: 'the test',
      async run({ step, progress }) {
        progress(1, 2);
        step('transcodes');
        return { state: 'COMPLETED', report: { error: 'nothing wrong' } };
      },
      after: ({ command }, end) => void after.push(`${command.job_id}:${end.state}`),
    });
    await send(101);
    await until(() => finals(reports).length === 1);
    expect(reports.map((r) => [r.state, r.step])).toEqual([
      ['STARTED', 'preprocess'],
      ['PROGRESS', 'preprocess'],
      ['PROGRESS', 'transcodes'],
      ['COMPLETED', 'transcodes'],
    ]);
    expect(finals(reports)[0]).toMatchObject({ id: 'job-101-done', job_id: 101, asset_id: 'a101', progress: 100, error: 'nothing wrong' });
    expect(reports[0]?.worker).toMatch(/^conversion@/);
    expect(after).toEqual(['101:COMPLETED']);
  });

  it('gives a failing job back for another delivery, and once every delivery failed ends it FAILED, saying why', async () => {
    let runs = 0;
    const { reports, send } = await start('transcode', {
      firstStep: () => 'transcodes',
      noun: 'the test work',
      async run() {
        runs += 1;
        throw new Error(`storage down (${runs})`);
      },
      givenUp: (command, why) => ({ error: `${command.asset_id}: ${why}` }),
    });
    await send(102);
    await until(() => finals(reports).length === 1);
    expect(runs).toBe(3);
    expect(finals(reports)).toEqual([
      expect.objectContaining({ state: 'FAILED', job_id: 102, error: 'a102: the test work failed after every retry: storage down (3)' }),
    ]);
  });

  it('sends no final report for a deferred job, which runs again and ends once', async () => {
    let runs = 0;
    const { reports, send } = await start('upload', {
      firstStep: () => 'download',
      noun: 'the download',
      async run({ ctx }) {
        runs += 1;
        if (runs === 1) {
          ctx.msg.nak(100);
          return { state: 'DEFERRED' };
        }
        return { state: 'COMPLETED' };
      },
    });
    await send(103);
    await until(() => finals(reports).length === 1);
    await sleep(scaled(300));
    expect(runs).toBe(2);
    expect(finals(reports)).toHaveLength(1);
  });

  it('does not run a job again when the work after its report fails', async () => {
    let runs = 0;
    const { reports, send } = await start('webhook', {
      firstStep: (command) => command.type,
      noun: 'the reissue',
      async run() {
        runs += 1;
        return { state: 'FAILED', report: { error: 'bad range' } };
      },
      after: () => {
        throw new Error('usage not published');
      },
    });
    await send(104, { type: 'reissue_callbacks' });
    await until(() => finals(reports).length === 1);
    await sleep(scaled(300));
    expect(runs).toBe(1);
    expect(finals(reports)).toEqual([expect.objectContaining({ state: 'FAILED', step: 'reissue_callbacks', error: 'bad range' })]);
  });
});
