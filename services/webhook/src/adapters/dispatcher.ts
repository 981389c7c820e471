import type { Logger } from '@dam/logging';
import { DELIVERED_STATUSES, nextAttemptDelay, signedHeaders, type WebhookSettings } from '../domain/delivery';
import type { DeliveryRepository, DueDelivery } from './delivery.repository';

export interface DispatcherDeps {
  repo: DeliveryRepository;
  /** The group's webhook settings now (urls and signing secrets); throws when they cannot be read. */
  settings: (groupId: number) => Promise<WebhookSettings>;
  /** One POST through the outbound guard: the answer's status, or a throw (refused, unreachable, too slow). */
  post: (url: string, headers: Record<string, string>, body: string) => Promise<{ status: number }>;
  retryDelaysMs: readonly number[];
  timeoutMs: number;
  concurrency: number;
  perUrlConcurrency: number;
  /** Slots one group may hold over all its URLs (below `concurrency`: other groups always find free ones). */
  perGroupConcurrency: number;
  intervalMs: number;
  /**
   * The stream sequence up to which every event has been recorded (the asset-events durable's ack floor): only
   * deliveries at or below it are sent. When it cannot be read, the last value read holds.
   */
  floor?: () => Promise<number>;
  logger: Logger;
  now?: () => Date;
}

/**
 * Sends due deliveries: at most `concurrency` at once, `perUrlConcurrency` per URL (a slow or dead receiver holds
 * only its own slots, never another's) and `perGroupConcurrency` per group (a tenant naming many slow receivers
 * holds only its share, and free slots go round-robin across groups), each asset's events to one URL in order.
 * Every attempt is recorded; a failed one is retried on the schedule until none is left.
 */
export class Dispatcher {
  private readonly inflight = new Map<string, number>();
  private readonly inflightByGroup = new Map<number, number>();
  private running = 0;
  private timer: NodeJS.Timeout | undefined;
  private ticking = false;
  private again = false;
  private stopped = false;
  private readonly active = new Set<Promise<void>>();
  private floor = 0;

  constructor(private readonly deps: DispatcherDeps) {}

  start(): { stop: () => Promise<void> } {
    this.timer = setInterval(() => this.wake(), this.deps.intervalMs);
    this.timer.unref();
    this.wake();
    return { stop: () => this.stop() };
  }

  /** Looks for due deliveries now (a new event or a finished attempt). */
  wake(): void {
    if (this.stopped) return;
    if (this.ticking) {
      this.again = true;
      return;
    }
    this.ticking = true;
    void this.tick()
      .catch((error: unknown) => this.deps.logger.error({ err: error }, 'webhook dispatch failed'))
      .finally(() => {
        this.ticking = false;
        if (this.again) {
          this.again = false;
          this.wake();
        }
      });
  }

  private async tick(): Promise<void> {
    const room = this.deps.concurrency - this.running;
    if (room <= 0) return;
    const floor = this.deps.floor ? await this.readFloor(this.deps.floor) : undefined;
    const due = await this.deps.repo.claimDue({
      limit: room,
      perUrl: this.deps.perUrlConcurrency,
      perGroup: this.deps.perGroupConcurrency,
      runningByUrl: new Map(this.inflight),
      runningByGroup: new Map(this.inflightByGroup),
      // The lease outlives one attempt (timeout plus margin): a sender that dies leaves it to run out.
      leaseMs: this.deps.timeoutMs * 2 + 30_000,
      ...(floor !== undefined ? { floor } : {}),
    });
    const giveBack: number[] = [];
    for (const d of due) {
      const full = (this.inflight.get(d.url) ?? 0) >= this.deps.perUrlConcurrency || (this.inflightByGroup.get(d.groupId) ?? 0) >= this.deps.perGroupConcurrency;
      if (this.stopped || full || this.running >= this.deps.concurrency) {
        giveBack.push(d.id);
        continue;
      }
      this.inflight.set(d.url, (this.inflight.get(d.url) ?? 0) + 1);
      this.inflightByGroup.set(d.groupId, (this.inflightByGroup.get(d.groupId) ?? 0) + 1);
      this.running += 1;
      // An attempt whose record fails (PostgreSQL away) is not lost: its lease runs out and it is claimed again. It
      // must not reject unhandled, which would end the process for every other delivery.
      const p = this.attempt(d)
        .catch((error: unknown) => this.deps.logger.warn({ err: error, delivery: d.id }, 'webhook attempt not recorded: sent again once its lease runs out'))
        .finally(() => {
          const left = (this.inflight.get(d.url) ?? 1) - 1;
          if (left > 0) this.inflight.set(d.url, left);
          else this.inflight.delete(d.url);
          const groupLeft = (this.inflightByGroup.get(d.groupId) ?? 1) - 1;
          if (groupLeft > 0) this.inflightByGroup.set(d.groupId, groupLeft);
          else this.inflightByGroup.delete(d.groupId);
          this.running -= 1;
          this.active.delete(p);
          this.wake();
        });
      this.active.add(p);
    }
    await this.deps.repo.release(giveBack);
  }

  private async readFloor(read: () => Promise<number>): Promise<number> {
    try {
      this.floor = await read();
    } catch (error) {
      this.deps.logger.warn({ err: error }, 'the asset events ack floor could not be read: the last one holds');
    }
    return this.floor;
  }

  private async attempt(d: DueDelivery): Promise<void> {
    let settings: WebhookSettings;
    try {
      settings = await this.deps.settings(d.groupId);
    } catch (error) {
      // Not an attempt: nothing was sent. It is taken again on a later round.
      this.deps.logger.warn({ err: error, delivery: d.id }, 'webhook settings unavailable: delivery postponed');
      await this.deps.repo.release([d.id]);
      return;
    }
    const started = Date.now();
    if (!settings.urls.includes(d.url)) {
      await this.deps.repo.finishAttempt(d, { delivered: false, error: 'the URL is no longer in the webhook settings', durationMs: 0 });
      return;
    }
    let status: number | undefined;
    let error: string | undefined;
    try {
      const headers = signedHeaders({ webhookId: d.webhookId, eventType: d.eventType, body: d.body, secrets: settings.secrets, at: this.deps.now?.() ?? new Date() });
      status = (await this.deps.post(d.url, headers, d.body)).status;
      if (!DELIVERED_STATUSES.has(status)) error = `the receiver answered ${status}`;
    } catch (e) {
      error = e instanceof Error ? e.message : String(e);
    }
    const delivered = status !== undefined && DELIVERED_STATUSES.has(status);
    const retryInMs = delivered ? undefined : nextAttemptDelay(d.attempts + 1, this.deps.retryDelaysMs);
    await this.deps.repo.finishAttempt(d, { delivered, durationMs: Date.now() - started, ...(status !== undefined ? { status } : {}), ...(error ? { error } : {}), ...(retryInMs !== undefined ? { retryInMs } : {}) });
    this.deps.logger.info({ delivery: d.id, webhook_id: d.webhookId, url: d.url, attempt: d.attempts + 1, status, error, delivered, retry_in_ms: retryInMs }, 'webhook attempt');
  }

  private async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await Promise.allSettled([...this.active]);
  }
}
