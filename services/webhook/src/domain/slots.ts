import type { DueDelivery } from './delivery';

/**
 * The dispatcher's sending slots: at most `total` attempts at once, `perUrl` per URL (a slow or dead receiver holds
 * only its own slots, never another's) and `perGroup` per group (a tenant naming many slow receivers holds only its
 * share: below `total`, so other groups always find free ones).
 */
export class SendingSlots {
  private readonly byUrl = new Map<string, number>();
  private readonly byGroup = new Map<number, number>();
  private running = 0;

  constructor(private readonly limits: { total: number; perUrl: number; perGroup: number }) {}

  /** Slots free now. */
  free(): number {
    return this.limits.total - this.running;
  }

  /** What a claim may take: the free slots and what runs per URL and per group (snapshots). */
  claim(): { limit: number; perUrl: number; perGroup: number; runningByUrl: ReadonlyMap<string, number>; runningByGroup: ReadonlyMap<number, number> } {
    return {
      limit: this.free(),
      perUrl: this.limits.perUrl,
      perGroup: this.limits.perGroup,
      runningByUrl: new Map(this.byUrl),
      runningByGroup: new Map(this.byGroup),
    };
  }

  /** Takes a slot for `d`, or false when the total, its URL's or its group's are full. */
  take(d: Pick<DueDelivery, 'url' | 'groupId'>): boolean {
    if (this.running >= this.limits.total || (this.byUrl.get(d.url) ?? 0) >= this.limits.perUrl || (this.byGroup.get(d.groupId) ?? 0) >= this.limits.perGroup)
      return false;
    this.byUrl.set(d.url, (this.byUrl.get(d.url) ?? 0) + 1);
    this.byGroup.set(d.groupId, (this.byGroup.get(d.groupId) ?? 0) + 1);
    this.running += 1;
    return true;
  }

  give(d: Pick<DueDelivery, 'url' | 'groupId'>): void {
    decrement(this.byUrl, d.url);
    decrement(this.byGroup, d.groupId);
    this.running -= 1;
  }
}

function decrement<K>(counts: Map<K, number>, key: K): void {
  const left = (counts.get(key) ?? 1) - 1;
  if (left > 0) counts.set(key, left);
  else counts.delete(key);
}
