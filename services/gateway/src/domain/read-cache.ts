/**
 * The gateway's Get Data cache (issue 33): metadata's 200 answers kept per caller and URL, so a repeated read costs one
 * hop. An answer is kept only while nothing says it changed:
 * - metadata announces every committed change of an asset's record (its `asset_changed` trigger, relayed on NATS):
 *   the asset's answers are dropped (`invalidate`), and `*` (notices may have been missed) drops everything;
 * - a write through this gateway drops everything when it starts and again when it ends (`clear`): the caller's next
 *   read sees it, whichever asset it touched;
 * - an answer fetched while its asset changed is not kept: each fetch takes a ticket (`begin`), and `keep` refuses a
 *   ticket that an invalidation or a clear overtook;
 * - every answer is dropped after `ttlMs` at the latest (a notice lost in transit), and nothing is served while the
 *   notices cannot arrive (`setEnabled(false)`: NATS disconnected).
 */
export interface CachedAnswer {
  headers: Record<string, string>;
  body: Buffer;
}

interface Entry {
  assetId: string;
  answer: CachedAnswer;
  expiresAt: number;
}

/** The fetches of one asset in flight since its last invalidation; `stale` once an invalidation overtook them. */
interface Fetches {
  count: number;
  stale: boolean;
}

export interface Ticket {
  readonly assetId: string;
  readonly generation: number;
  readonly fetches: Fetches;
  done: boolean;
}

export interface ReadCacheOptions {
  ttlMs: number;
  /** Bytes of kept bodies in all; the oldest answers go first. */
  maxBytes: number;
  /** One body larger than this is not kept. */
  maxEntryBytes?: number;
  now?: () => number;
}

export interface ReadCacheStats {
  entries: number;
  bytes: number;
  hits: number;
  misses: number;
}

export class ReadCache {
  private readonly entries = new Map<string, Entry>();
  private readonly byAsset = new Map<string, Set<string>>();
  private readonly fetches = new Map<string, Fetches>();
  /** Moved by every clear: a ticket from before it is refused. */
  private generation = 0;
  private bytes = 0;
  /** Off until the notices can arrive (the follower turns it on). */
  private enabled = false;
  private hits = 0;
  private misses = 0;
  private readonly now: () => number;
  /** One body larger than this is not kept. */
  readonly maxEntryBytes: number;

  constructor(private readonly opts: ReadCacheOptions) {
    this.now = opts.now ?? Date.now;
    this.maxEntryBytes = opts.maxEntryBytes ?? Math.min(256 * 1024, opts.maxBytes);
  }

  /** The kept answer for `key`, if any and fresh. */
  get(key: string): CachedAnswer | undefined {
    if (!this.enabled) return undefined;
    const entry = this.entries.get(key);
    if (entry && entry.expiresAt > this.now()) {
      this.hits += 1;
      return entry.answer;
    }
    if (entry) this.remove(key, entry);
    this.misses += 1;
    return undefined;
  }

  /** A fetch of `assetId` starts: its answer may be kept only if nothing changes the asset before `keep`. */
  begin(assetId: string): Ticket {
    let f = this.fetches.get(assetId);
    if (!f) {
      f = { count: 0, stale: false };
      this.fetches.set(assetId, f);
    }
    f.count += 1;
    return { assetId, generation: this.generation, fetches: f, done: false };
  }

  /** The fetch ended; its answer is kept when given, still valid and not too large. Returns whether it was kept. */
  keep(ticket: Ticket, key: string, answer?: CachedAnswer): boolean {
    if (ticket.done) return false;
    ticket.done = true;
    const f = ticket.fetches;
    f.count -= 1;
    if (f.count === 0 && this.fetches.get(ticket.assetId) === f) this.fetches.delete(ticket.assetId);
    if (!answer || !this.enabled || f.stale || ticket.generation !== this.generation) return false;
    const size = answer.body.length + key.length;
    if (size > this.maxEntryBytes) return false;
    const old = this.entries.get(key);
    if (old) this.remove(key, old);
    this.entries.set(key, { assetId: ticket.assetId, answer, expiresAt: this.now() + this.opts.ttlMs });
    let keys = this.byAsset.get(ticket.assetId);
    if (!keys) {
      keys = new Set();
      this.byAsset.set(ticket.assetId, keys);
    }
    keys.add(key);
    this.bytes += size;
    // Oldest first (a Map iterates in insertion order).
    for (const [k, e] of this.entries) {
      if (this.bytes <= this.opts.maxBytes) break;
      this.remove(k, e);
    }
    return true;
  }

  /** The asset changed: its kept answers go, and fetches of it in flight will not be kept. */
  invalidate(assetId: string): void {
    const f = this.fetches.get(assetId);
    if (f) {
      f.stale = true;
      this.fetches.delete(assetId);
    }
    const keys = this.byAsset.get(assetId);
    if (!keys) return;
    for (const key of keys) {
      const e = this.entries.get(key);
      if (e) this.remove(key, e);
    }
  }

  /** Anything may have changed: every kept answer goes, and no fetch in flight will be kept. */
  clear(): void {
    this.generation += 1;
    this.entries.clear();
    this.byAsset.clear();
    this.bytes = 0;
  }

  /** Off while notices cannot arrive (emptied either way); on again once they can. */
  setEnabled(enabled: boolean): void {
    this.clear();
    this.enabled = enabled;
  }

  get isEnabled(): boolean {
    return this.enabled;
  }

  stats(): ReadCacheStats {
    return { entries: this.entries.size, bytes: this.bytes, hits: this.hits, misses: this.misses };
  }

  private remove(key: string, entry: Entry): void {
    this.entries.delete(key);
    this.bytes -= entry.answer.body.length + key.length;
    const keys = this.byAsset.get(entry.assetId);
    keys?.delete(key);
    if (keys && keys.size === 0) this.byAsset.delete(entry.assetId);
  }
}
