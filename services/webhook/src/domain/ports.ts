import type { AttemptResult, DeliveryView, DueDelivery, LoggedEvent, WebhookSettings } from './delivery';

/** What the use cases and consumers need from outside, implemented in adapters/ and wired in main.ts. */

/** How much a claim may take, from the dispatcher's slots (all counts are this process's). */
export interface ClaimLimits {
  /** Free slots: deliveries to take at most. */
  limit: number;
  /** Slots one URL may hold, and one group (all its URLs together). */
  perUrl: number;
  perGroup: number;
  /** Attempts in flight per URL and per group. */
  runningByUrl: ReadonlyMap<string, number>;
  runningByGroup: ReadonlyMap<number, number>;
  /** How long a taken delivery stays leased (a sender that dies leaves it to run out). */
  leaseMs: number;
  /** The stream sequence up to which every event has been recorded (see `claimDue`). */
  floor?: number;
}

/** The event log and the deliveries (adapters/delivery.repository.ts, PostgreSQL). */
export interface DeliveryStore {
  /**
   * Keeps the event and opens one delivery per URL, at once; a redelivered event changes nothing. Returns how many
   * deliveries it opened.
   */
  recordEvent(e: LoggedEvent, urls: readonly string[]): Promise<number>;
  /**
   * Takes due deliveries for an attempt (leased for `leaseMs`): within `limit`, at most `perUrl` per URL and `perGroup`
   * per group counting those running, round-robin across groups, and of each asset and URL only the earliest pending
   * one (an asset's events reach a URL in order: the next one is due only once this one is delivered or failed).
   * With `floor`, nothing of an event past it (an earlier event of its asset may still be on its way in).
   */
  claimDue(limits: ClaimLimits): Promise<DueDelivery[]>;
  /** Records one attempt and what follows: delivered, a retry after `retryInMs`, or failed for good. */
  finishAttempt(d: DueDelivery, result: AttemptResult): Promise<void>;
  /** Gives taken deliveries back untried. */
  release(ids: readonly number[]): Promise<void>;
  /** New deliveries (new webhook ids) of the group's events in the range whose asset `userId` created; how many. */
  reissue(input: { groupId: number; userId: number; from: string; to: string; jobId: number; urls: readonly string[] }): Promise<number>;
  /** The group's delivery log, newest first. */
  log(groupId: number, status: string | undefined, offset: number, limit: number): Promise<{ items: DeliveryView[]; total: number }>;
  /** Forgets events older than `days` (they can no longer be reissued); how many. */
  pruneEvents(days: number): Promise<number>;
}

/** The group's webhook settings now (urls and signing secrets); throws when they cannot be read. */
export type SettingsSource = (groupId: number) => Promise<WebhookSettings>;

/** One POST through the outbound guard: the answer's status, or a throw (refused, unreachable, too slow). */
export type WebhookSender = (url: string, headers: Record<string, string>, body: string) => Promise<{ status: number }>;

export interface Clock {
  now(): Date;
}
