import type { Express } from 'express';
import type { Logger } from '@dam/logging';
import type { CheckState, ReadinessCheck } from './app';
import { serve, type Served } from './serve';

/** Something a service runs besides its HTTP routes, stopped before the process ends. */
export interface Running {
  stop(): Promise<void>;
}

/**
 * A consumer or poller a service declares. Consumers name their durable and the subjects they handle, so the
 * start-up can refuse two consumers on one durable or two handlers for one subject (both would split or
 * double the work silently).
 */
export type Worker =
  | { kind: 'consumer'; durable: string; stream: string; subjects: readonly string[]; start(): Promise<Running> }
  | { kind: 'poller'; name: string; start(): Promise<Running> | Running };

/** Closed last, in reverse order of declaration: pools, connections, telemetry. */
export interface Resource {
  name: string;
  close(): Promise<void>;
}

export interface ServiceDefinition {
  logger: Logger;
  host: string;
  port: number;
  shutdownTimeoutMs?: number;
  /** Infrastructure checks for /readyz (`postgres`, `nats`, `s3`...); each worker adds its own. */
  checks?: Record<string, () => Promise<boolean>>;
  /**
   * Checks reported in /readyz that do not decide it (`nats`): every route serves without the dependency (records in
   * PostgreSQL, events wait in outboxes, consumers resume by themselves), so while it is away /readyz answers 200
   * `degraded` with the check `false`, and the pod stays in its Service.
   */
  degradedChecks?: Record<string, () => Promise<boolean>>;
  /** Started in order after the checks are declared, stopped in the same order (consumers before pollers). */
  workers?: readonly Worker[];
  resources?: readonly Resource[];
  /** The HTTP app, given the service's whole readiness check. */
  app(readiness: ReadinessCheck): Express;
}

const workerName = (w: Worker): string => (w.kind === 'consumer' ? `consumer:${w.durable}` : `poller:${w.name}`);

/** Refuses a set of workers that would share a durable or handle one subject twice (throws at start-up). */
export function checkWorkers(workers: readonly Worker[]): void {
  const names = new Set<string>();
  const subjects = new Map<string, string>();
  for (const w of workers) {
    const name = workerName(w);
    if (names.has(name)) throw new Error(`two workers are declared as ${name}`);
    names.add(name);
    if (w.kind !== 'consumer') continue;
    for (const subject of w.subjects) {
      const key = `${w.stream} ${subject}`;
      const other = subjects.get(key);
      if (other) throw new Error(`subject ${subject} of ${w.stream} has two handlers: ${other} and ${name}`);
      subjects.set(key, name);
    }
  }
}

/**
 * The one start-up of every service: checks and starts the declared workers, serves the app with a readiness
 * made of the infrastructure checks plus one per worker, and on SIGTERM stops taking requests, stops the
 * workers in order, then closes the resources in reverse order.
 */
export async function runService(def: ServiceDefinition): Promise<Served> {
  const workers = def.workers ?? [];
  checkWorkers(workers);
  const running: Array<{ name: string; handle: Running; stopped: boolean }> = [];
  try {
    for (const w of workers) running.push({ name: workerName(w), handle: await w.start(), stopped: false });
  } catch (error) {
    await Promise.allSettled(running.map((r) => r.handle.stop()));
    throw error;
  }
  const checked = async (checks: Record<string, () => Promise<boolean>> | undefined, failed: CheckState) =>
    Object.fromEntries(
      await Promise.all(Object.entries(checks ?? {}).map(async ([name, check]) => [name, (await check().catch(() => false)) || failed] as const)),
    );
  const readiness: ReadinessCheck = async () => {
    const [deciding, degraded] = await Promise.all([checked(def.checks, false), checked(def.degradedChecks, 'degraded')]);
    return { ...deciding, ...degraded, ...Object.fromEntries(running.map((r) => [r.name, !r.stopped])) };
  };
  def.logger.info({ workers: running.map((r) => r.name) }, 'workers started');
  return serve(def.app(readiness), {
    host: def.host,
    port: def.port,
    logger: def.logger,
    ...(def.shutdownTimeoutMs !== undefined ? { shutdownTimeoutMs: def.shutdownTimeoutMs } : {}),
    onShutdown: async () => {
      for (const r of running) {
        await r.handle.stop().catch((err: unknown) => def.logger.warn({ err, worker: r.name }, 'worker did not stop cleanly'));
        r.stopped = true;
      }
      for (const resource of [...(def.resources ?? [])].reverse()) {
        await resource.close().catch((err: unknown) => def.logger.warn({ err, resource: resource.name }, 'resource did not close cleanly'));
      }
    },
  });
}
