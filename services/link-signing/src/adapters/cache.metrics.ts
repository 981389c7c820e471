import { gauge } from '@dam/metrics';
import type { ByteCache } from './byte-cache';

/**
 * The byte cache as operators see it at `/metrics`, read at each scrape: `cdn_cache{what=...}` with entries,
 * bytes, max_bytes and the counts of hits, misses, fills (upstream reads into the cache) and evictions.
 */
export function exposeCacheMetrics(cache: ByteCache): void {
  gauge<'what'>({
    name: 'cdn_cache',
    help: 'Edge byte cache: entries, bytes, max_bytes, and counts of hits, misses, fills and evictions since start',
    labelNames: ['what'],
    collect() {
      const s = cache.stats();
      this.set({ what: 'entries' }, s.entries);
      this.set({ what: 'bytes' }, s.bytes);
      this.set({ what: 'max_bytes' }, s.maxBytes);
      this.set({ what: 'hits' }, s.hits);
      this.set({ what: 'misses' }, s.misses);
      this.set({ what: 'fills' }, s.fills);
      this.set({ what: 'evictions' }, s.evictions);
    },
  });
}
