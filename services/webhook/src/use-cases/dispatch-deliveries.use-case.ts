import type { Logger } from '@dam/logging';
import { attemptResult, signedHeaders, type DueDelivery } from '../domain/delivery';
import type { Clock, DeliveryStore, SettingsSource, WebhookSender } from '../domain/ports';
import { SendingSlots } from '../domain/slots';

export interface DispatchDeps {
  deliveries: Pick<DeliveryStore, 'claimDue' | 'release' | 'finishAttempt'>;
  settings: SettingsSource;
  send: WebhookSender;
  clock: Clock;
  /** `retryDelaysMs[i]`: the wait before attempt i + 1; no attempt beyond the list. */
  retryDelaysMs: readonly number[];
  timeoutMs: number;
  concurrency: number;
  perUrlConcurrency: number;
  /** Slots one group may hold over all its URLs (below `concurrency`: other groups always find free ones). */
  perGroupConcurrency: number;
  /**
   * The stream sequence up to which every event has been recorded (the asset-events durable's ack floor): only
   * deliveries at or below it are sent. When it cannot be read, the last value read holds.
   */
  floor?: () => Promise<number>;
  logger: Logger;
  /** An attempt has ended and freed its slot: the caller runs another round soon. */
  onSlotFreed(): void;
}

export interface DeliveryDispatch {
  /** One round: claims what the free slots allow and starts those attempts (it does not wait for them). */
  round(): Promise<void>;
  /** No later round starts anything; resolves once every attempt in flight has been recorded. */
  stop(): Promise<void>;
}

/**
 * Sends due deliveries within the sending slots (domain/slots.ts), each asset's events to one URL in order (the store
 * gives only the head of each chain, and the next one once this one has ended). Every attempt is recorded; a failed
 * one is retried on the schedule until none is left. Rounds are the caller's to run (consumers/dispatch.poller.ts):
 * on a timer, when a new delivery is recorded, and when an attempt frees its slot.
 */
export function deliveryDispatch(deps: DispatchDeps): DeliveryDispatch {
  const slots = new SendingSlots({ total: deps.concurrency, perUrl: deps.perUrlConcurrency, perGroup: deps.perGroupConcurrency });
  const active = new Set<Promise<void>>();
  let stopped = false;
  let lastFloor = 0;

  const readFloor = async (read: () => Promise<number>): Promise<number> => {
    try {
      lastFloor = await read();
    } catch (error) {
      deps.logger.warn({ err: error }, 'the asset events ack floor could not be read: the last one holds');
    }
    return lastFloor;
  };

  const attempt = async (d: DueDelivery): Promise<void> => {
    let settings;
    try {
      settings = await deps.settings(d.groupId);
    } catch (error) {
      // Not an attempt: nothing was sent. It is taken again on a later round.
      deps.logger.warn({ err: error, delivery: d.id }, 'webhook settings unavailable: delivery postponed');
      await deps.deliveries.release([d.id]);
      return;
    }
    if (!settings.urls.includes(d.url)) {
      await deps.deliveries.finishAttempt(d, { delivered: false, error: 'the URL is no longer in the webhook settings', durationMs: 0 });
      return;
    }
    const started = deps.clock.now();
    let answer: { status?: number; error?: string };
    try {
      const headers = signedHeaders({ webhookId: d.webhookId, eventType: d.eventType, body: d.body, secrets: settings.secrets, at: started });
      answer = { status: (await deps.send(d.url, headers, d.body)).status };
    } catch (e) {
      answer = { error: e instanceof Error ? e.message : String(e) };
    }
    const result = attemptResult(answer, d.attempts, deps.retryDelaysMs, deps.clock.now().getTime() - started.getTime());
    await deps.deliveries.finishAttempt(d, result);
    deps.logger.info(
      {
        delivery: d.id,
        webhook_id: d.webhookId,
        url: d.url,
        attempt: d.attempts + 1,
        status: result.status,
        error: result.error,
        delivered: result.delivered,
        retry_in_ms: result.retryInMs,
      },
      'webhook attempt',
    );
  };

  const start = (d: DueDelivery): void => {
    // An attempt whose record fails (PostgreSQL away) is not lost: its lease runs out and it is claimed again. It
    // must not reject unhandled, which would end the process for every other delivery.
    const p = attempt(d)
      .catch((error: unknown) => deps.logger.warn({ err: error, delivery: d.id }, 'webhook attempt not recorded: sent again once its lease runs out'))
      .finally(() => {
        slots.give(d);
        active.delete(p);
        deps.onSlotFreed();
      });
    active.add(p);
  };

  return {
    async round() {
      if (stopped || slots.free() <= 0) return;
      const floor = deps.floor ? await readFloor(deps.floor) : undefined;
      const due = await deps.deliveries.claimDue({
        ...slots.claim(),
        // The lease outlives one attempt (timeout plus margin): a sender that dies leaves it to run out.
        leaseMs: deps.timeoutMs * 2 + 30_000,
        ...(floor !== undefined ? { floor } : {}),
      });
      const giveBack: number[] = [];
      for (const d of due) {
        if (!stopped && slots.take(d)) start(d);
        else giveBack.push(d.id);
      }
      await deps.deliveries.release(giveBack);
    },
    async stop() {
      stopped = true;
      await Promise.allSettled([...active]);
    },
  };
}
