import { randomUUID } from 'node:crypto';
import type { JetStreamClient } from '@nats-io/jetstream';
import { connectionOf, natsCall } from './connection';
import { publishEvent } from './publish';
import { usageOf, type UsageMetric, type UsageRecord } from './schemas/usage.event';

/**
 * A counter of one usage metric, added up per group and user between flushes (the gateway's requests, the edge's
 * bytes); each flush publishes one record per group and user.
 */
export class UsageMeter {
  private counts = new Map<string, { group_id: string; user_id: number; value: number }>();
  private since = new Date();

  constructor(private readonly metric: UsageMetric) {}

  add(groupId: number, userId: number, amount: number): void {
    if (amount <= 0) return;
    const key = `${groupId}:${userId}`;
    const c = this.counts.get(key);
    if (c) c.value += amount;
    else this.counts.set(key, { group_id: String(groupId), user_id: userId, value: amount });
  }

  /**
   * Publishes what was counted since the last flush. A record that cannot be published is counted again in the
   * next flush (its id is new then, so nothing is counted twice).
   */
  async flush(publish: (record: UsageRecord) => Promise<unknown>): Promise<number> {
    const counts = [...this.counts.values()];
    const start = this.since.toISOString();
    const end = new Date();
    this.counts = new Map();
    this.since = end;
    let sent = 0;
    for (const c of counts) {
      try {
        await publish({ id: `${this.metric}-${randomUUID()}`, metric: this.metric, ...c, start, end: end.toISOString() });
        sent += 1;
      } catch {
        this.add(Number(c.group_id), c.user_id, c.value);
      }
    }
    return sent;
  }

  /** Publishes what was counted since the last flush on the metric's subject (`dam.internal.usage.<metric>`). */
  flushTo(js: JetStreamClient): Promise<number> {
    const usage = usageOf(this.metric);
    const nc = connectionOf(js);
    // NATS down: nothing is sent into a buffer the reconnection discards; the counts wait for the next flush.
    return this.flush((record) => {
      const send = () => publishEvent(js, usage.subject, usage.schema, record, { msgId: record.id });
      return nc ? natsCall(nc, send, { graceMs: 0 }) : send();
    });
  }
}
