import { createWriteStream } from 'node:fs';
import { mkdir, rename, rm, unlink } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import type { CacheEntry, EdgeCache } from '../domain/ports';

export type { CacheEntry } from '../domain/ports';

export interface CacheStats {
  entries: number;
  bytes: number;
  maxBytes: number;
  hits: number;
  misses: number;
  fills: number;
  evictions: number;
}

/** Whether an object key, or a folder prefix ending with `/`, names the entry's object. */
const names = (objectKeyOrFolder: string, entry: CacheEntry): boolean =>
  objectKeyOrFolder.endsWith('/') ? entry.objectKey.startsWith(objectKeyOrFolder) : entry.objectKey === objectKeyOrFolder;

/**
 * The edge's byte cache: whole objects as files in one folder, at most `maxBytes` in all, the least recently
 * used dropped first. A fill is single-flight: while one upstream read of an object is under way, every other
 * request for it waits for that one instead of reading the object again. Files are written under a temporary
 * name and renamed when complete, so a reader never sees half an object; a file dropped while a reader has it
 * open stays readable for that reader (POSIX unlink).
 */
export class ByteCache implements EdgeCache {
  private readonly entries = new Map<string, CacheEntry>();
  private readonly filling = new Map<string, Promise<CacheEntry | undefined>>();
  private used = 0;
  private seq = 0;
  private readonly counters = { hits: 0, misses: 0, fills: 0, evictions: 0 };

  constructor(
    readonly dir: string,
    readonly maxBytes: number,
    readonly maxObjectBytes: number = Math.floor(maxBytes / 4),
  ) {}

  static keyOf(objectKey: string, etag: string): string {
    return `${objectKey}\n${etag}`;
  }

  keyOf(objectKey: string, etag: string): string {
    return ByteCache.keyOf(objectKey, etag);
  }

  /** Starts empty: what a previous process left is not trusted (it may be half-written or stale). */
  async init(): Promise<void> {
    await rm(this.dir, { recursive: true, force: true });
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
  }

  cacheable(size: number): boolean {
    return size <= this.maxObjectBytes && size <= this.maxBytes;
  }

  /** The entry, marked as just used; counts a hit or a miss. */
  lookup(key: string): CacheEntry | undefined {
    const entry = this.entries.get(key);
    if (entry) {
      this.entries.delete(key);
      this.entries.set(key, entry);
      this.counters.hits += 1;
    } else {
      this.counters.misses += 1;
    }
    return entry;
  }

  has(key: string): boolean {
    return this.entries.has(key);
  }

  /** The fill under way for this key, if any. */
  pending(key: string): Promise<CacheEntry | undefined> | undefined {
    return this.filling.get(key);
  }

  /**
   * Stores the object `open` reads (exactly `size` bytes) as the entry for `key`, opening the upstream only when
   * no fill of the key is under way and it is not stored yet: concurrent callers join the one fill. `onSource`
   * receives the stream right after it opened, synchronously, so the opener can pipe it to its client too (the
   * fill then follows the client's pace). Resolves undefined when the stream fails or is short (nothing is kept).
   */
  fillFrom(entry: Omit<CacheEntry, 'file'>, open: () => Promise<Readable>, onSource?: (source: Readable) => void): Promise<CacheEntry | undefined> {
    const stored = this.entries.get(entry.key);
    if (stored) return Promise.resolve(stored);
    const existing = this.filling.get(entry.key);
    if (existing) return existing;
    // Registered before the upstream is opened, so concurrent callers join this fill and open nothing.
    const done = (async () => {
      const source = await open();
      onSource?.(source);
      return this.write(entry, source);
    })().finally(() => this.filling.delete(entry.key));
    this.filling.set(entry.key, done);
    return done;
  }

  private async write(entry: Omit<CacheEntry, 'file'>, source: Readable): Promise<CacheEntry | undefined> {
    if (!this.cacheable(entry.size)) {
      source.resume();
      return undefined;
    }
    // A source that already failed emits nothing more: waiting for its end would wait for ever.
    if (source.destroyed) return undefined;
    const name = `${(this.seq += 1).toString(36)}-${Date.now().toString(36)}`;
    const tmp = path.join(this.dir, `${name}.part`);
    const file = path.join(this.dir, name);
    // A large buffer: with the default 16 KiB every upstream chunk would wait for its disk write, and a client
    // reading the same stream would be held to the pace of single small writes.
    const out = createWriteStream(tmp, { mode: 0o600, highWaterMark: 8 * 1024 * 1024 });
    const ok = await new Promise<boolean>((resolve) => {
      let settled = false;
      const settle = (value: boolean) => {
        if (settled) return;
        settled = true;
        resolve(value);
      };
      source.once('error', () => {
        out.destroy();
        settle(false);
      });
      source.once('close', () => {
        if (!source.readableEnded) {
          out.destroy();
          settle(false);
        }
      });
      out.once('error', () => settle(false));
      out.once('finish', () => settle(out.bytesWritten === entry.size));
      source.pipe(out);
    });
    if (!ok) {
      await unlink(tmp).catch(() => undefined);
      return undefined;
    }
    await rename(tmp, file);
    const stored: CacheEntry = { ...entry, file };
    const old = this.entries.get(entry.key);
    if (old) this.drop(old);
    this.entries.set(entry.key, stored);
    this.used += stored.size;
    this.counters.fills += 1;
    this.evictToFit();
    return this.entries.get(entry.key);
  }

  private drop(entry: CacheEntry): void {
    this.entries.delete(entry.key);
    this.used -= entry.size;
    void unlink(entry.file).catch(() => undefined);
  }

  private evictToFit(): void {
    for (const entry of this.entries.values()) {
      if (this.used <= this.maxBytes) return;
      this.drop(entry);
      this.counters.evictions += 1;
    }
  }

  /** Drops every stored object of an asset (replaced, deleted, purged); returns how many. */
  evictAsset(assetId: string): number {
    let n = 0;
    for (const entry of [...this.entries.values()]) {
      if (entry.assetId !== assetId) continue;
      this.drop(entry);
      n += 1;
    }
    return n;
  }

  /** Drops every version of one object, or every file under a folder prefix when it ends with `/`. */
  evictObject(objectKeyOrFolder: string): number {
    const matching = [...this.entries.values()].filter((entry) => names(objectKeyOrFolder, entry));
    for (const entry of matching) this.drop(entry);
    return matching.length;
  }

  /** Drops everything stored (the notices of replaced or purged objects may have been missed); returns how many. */
  clear(): number {
    const all = [...this.entries.values()];
    for (const entry of all) this.drop(entry);
    return all.length;
  }

  /** Whether some version of the object (or some file under the folder) is stored. */
  holds(objectKeyOrFolder: string): boolean {
    return [...this.entries.values()].some((entry) => names(objectKeyOrFolder, entry));
  }

  stats(): CacheStats {
    return { entries: this.entries.size, bytes: this.used, maxBytes: this.maxBytes, ...this.counters };
  }
}
