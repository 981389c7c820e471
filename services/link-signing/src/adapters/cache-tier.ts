import { lookup } from 'node:dns/promises';
import { request } from 'node:http';
import type { Logger } from '@dam/logging';

/** What the tier's nginx fetched from the edge under one of its cache keys. */
interface TierEntry {
  assetId: string;
  /**
   * The objects it was made of: the object served and, for a transformed image (CONTRACT §15), the object it was made
   * from, so that a purge of the link's key (a CDN purge job naming the key) reaches every transform of it. A playlist
   * has none: it is dropped with its asset.
   */
  objectKeys: readonly string[];
  /** Until when the tier may serve it without asking the edge again (its max-age, and a margin). */
  untilMs: number;
  /** When the edge began to look up what to answer (the asset's current object). */
  lookedUpAtMs: number;
}

export interface CacheTierOptions {
  /** The tiers' purge endpoints (CDN_TIER_PURGE_URLS); a host name stands for every address it resolves to. */
  purgeUrls: readonly string[];
  logger: Logger;
  /** At most this many keys remembered; past it the oldest are forgotten (they then live at most max-age there). */
  maxKeys?: number;
  now?: () => number;
}

const MARGIN_MS = 5000;
const REPURGE_AFTER_MS = 1000;
const EDGE_KEY = /^\/api\/v1\/files\/content\/([A-Za-z0-9]{1,64})[/?]/;

/**
 * The end of the tier's key of a `format=auto` link (deploy/cache/nginx-cdn.conf.template, `map $http_accept`):
 * nginx keys such a link on the class of the request's Accept instead of following `Vary: Accept` (a file per Accept
 * string, which no purge can name), so that every variant has a key the edge is told and can purge.
 */
export const ACCEPT_CLASS_KEY = ' accept=';

/**
 * Whether the tier may keep this answer under this key: an answer that follows Accept only under a key naming the
 * class it was made for (`avif`, `webp`, or `other`: the source's own format). nginx's map and the edge's reading of
 * Accept agree on every ordinary Accept; where they do not (an odd q-value, a parameter spelled otherwise), or on a
 * link nginx did not see as `format=auto` (its parameter percent-encoded), the answer is not kept (X-Accel-Expires: 0)
 * rather than kept for the others of its class.
 */
export function tierMayKeep(cacheKey: string, acceptClass: string | undefined): boolean {
  return acceptClass === undefined || cacheKey.endsWith(`${ACCEPT_CLASS_KEY}${acceptClass}`);
}

/** The objects an edge answer was made of (TierEntry.objectKeys): the object served, and a transform's source. */
export function tierObjectsOf(file: { objectKey: string; target: { source_object_key?: string | undefined } } | undefined): string[] {
  if (!file) return [];
  return file.target.source_object_key ? [file.objectKey, file.target.source_object_key] : [file.objectKey];
}

/**
 * The nginx cache tier in front of `{cdn}` (deploy/cache) keeps answers under the signed URL and its slice (and a
 * `format=auto` link's Accept class), keys only the edge can tie to an asset. Open-source nginx has no purge, so the
 * tier tells the edge each key it fetches (X-Cache-Key), and a purge (a replaced or deleted original, a conversion
 * made again, a CDN purge job) deletes those keys' files through the tier's purge endpoint. A key is remembered only
 * while the tier may serve it without coming back: after max-age it revalidates with the edge, which answers for the
 * current object (or refuses) anyway. What this replica forgets (a restart, more than maxKeys) is therefore served
 * downstream at most max-age longer, as any shared cache would.
 */
export class CacheTier {
  private readonly keys = new Map<string, TierEntry>();
  /** The keys of each asset: an asset's purge (every upload, replace, delete, processing) looks at its own keys alone. */
  private readonly byAsset = new Map<string, Set<string>>();
  private readonly maxKeys: number;
  private readonly now: () => number;

  constructor(private readonly options: CacheTierOptions) {
    this.maxKeys = options.maxKeys ?? 200_000;
    this.now = options.now ?? Date.now;
  }

  /** Remembers a key the tier fetched, when it names this asset (anything else sent as X-Cache-Key is ignored). */
  record(cacheKey: string, assetId: string, objectKeys: readonly string[], maxAgeSeconds: number, lookedUpAtMs = this.now()): void {
    if (EDGE_KEY.exec(cacheKey)?.[1] !== assetId || cacheKey.length > 4096 || maxAgeSeconds <= 0) return;
    this.forget(cacheKey);
    if (this.keys.size >= this.maxKeys) this.forget(this.keys.keys().next().value as string);
    this.keys.set(cacheKey, { assetId, objectKeys, untilMs: this.now() + maxAgeSeconds * 1000 + MARGIN_MS, lookedUpAtMs });
    const ofAsset = this.byAsset.get(assetId);
    if (ofAsset) ofAsset.add(cacheKey);
    else this.byAsset.set(assetId, new Set([cacheKey]));
  }

  private forget(cacheKey: string): void {
    const entry = this.keys.get(cacheKey);
    if (!entry) return;
    this.keys.delete(cacheKey);
    const ofAsset = this.byAsset.get(entry.assetId);
    ofAsset?.delete(cacheKey);
    if (ofAsset?.size === 0) this.byAsset.delete(entry.assetId);
  }

  get size(): number {
    return this.keys.size;
  }

  /**
   * Drops every key of these assets and of these objects (or folders, ending with `/`) from every tier. A moment
   * later, once more those fetched since whose lookup began before the purge: answered from what the edge knew before
   * the change (requests of one link share an in-flight lookup), they would otherwise keep the old bytes a max-age.
   */
  async purge(which: { assetIds?: readonly string[]; objectKeys?: readonly string[] }): Promise<number> {
    const at = this.now();
    const n = await this.purgeNow(which, Infinity);
    setTimeout(() => void this.purgeNow(which, at).catch(() => undefined), REPURGE_AFTER_MS).unref();
    return n;
  }

  private async purgeNow(which: { assetIds?: readonly string[]; objectKeys?: readonly string[] }, lookedUpBefore: number): Promise<number> {
    const assets = new Set(which.assetIds ?? []);
    const objects = which.objectKeys ?? [];
    const names = (e: TierEntry) => assets.has(e.assetId) || objects.some((o) => e.objectKeys.some((k) => (o.endsWith('/') ? k.startsWith(o) : k === o)));
    const now = this.now();
    const gone: string[] = [];
    const consider = (key: string, entry: TierEntry) => {
      if (entry.untilMs < now) this.forget(key);
      else if (names(entry) && entry.lookedUpAtMs < lookedUpBefore) gone.push(key);
    };
    // Objects (a CDN purge job naming keys or files) are looked for among every key; assets among their own.
    if (objects.length > 0) for (const [key, entry] of this.keys) consider(key, entry);
    else for (const id of assets) for (const key of this.byAsset.get(id) ?? []) consider(key, this.keys.get(key) as TierEntry);
    if (gone.length === 0) return 0;
    for (const key of gone) this.forget(key);
    await Promise.all(this.options.purgeUrls.map((url) => this.send(url, gone)));
    return gone.length;
  }

  /** POSTs the keys, one a line, to every address of the tier's host (each nginx replica has its own cache). */
  private async send(url: string, keys: readonly string[]): Promise<void> {
    const target = new URL(url);
    let addresses: string[];
    try {
      addresses = (await lookup(target.hostname, { all: true })).map((a) => a.address);
    } catch (err) {
      this.options.logger.warn({ err, url }, 'cache tier purge: its address did not resolve');
      return;
    }
    const body = Buffer.from(keys.join('\n'));
    await Promise.all(
      addresses.map(
        (address) =>
          new Promise<void>((resolve) => {
            const req = request(
              {
                host: address,
                port: target.port || 80,
                path: target.pathname,
                method: 'POST',
                headers: { 'content-type': 'text/plain', 'content-length': body.length, host: target.host },
                timeout: 5000,
              },
              (res) => {
                res.resume();
                if (res.statusCode !== 200) this.options.logger.warn({ url, address, status: res.statusCode }, 'cache tier purge refused');
                res.once('end', resolve);
              },
            );
            req.once('timeout', () => req.destroy(new Error('timeout')));
            req.once('error', (err) => {
              this.options.logger.warn({ err, url, address }, 'cache tier purge failed: the tier serves those keys until their max-age');
              resolve();
            });
            req.end(body);
          }),
      ),
    );
  }
}
