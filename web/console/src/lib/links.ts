import type { DamClient } from '@dam/client';

/**
 * Signed `cdn` links (CONTRACT §7) for showing conversions: thumbnails of a whole page at once through the bulk
 * Get Link (one request per conversion key), single ones for previews and players. Links live an hour and are
 * reused for 50 minutes, per asset version (`update_time`): a replaced asset gets new ones.
 */
const TTL_SECONDS = 3600;
const REUSE_MS = 50 * 60 * 1000;

interface Cached {
  url: string;
  until: number;
}
const cache = new Map<string, Cached>();
const cacheKey = (id: string, key: string, version: string, delivery: string) => `${id}\n${key}\n${version}\n${delivery}`;

export interface LinkRequest {
  id: string;
  key: string;
  /** The asset's update_time: part of the cache key. */
  version: string;
}

/** asset id → display link of the requested key (ids that cannot be linked are left out). */
export async function displayLinks(client: DamClient, wanted: LinkRequest[]): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const byKey = new Map<string, LinkRequest[]>();
  const now = Date.now();
  for (const w of wanted) {
    const hit = cache.get(cacheKey(w.id, w.key, w.version, 'display'));
    if (hit && hit.until > now) out.set(w.id, hit.url);
    else byKey.set(w.key, [...(byKey.get(w.key) ?? []), w]);
  }
  await Promise.all(
    [...byKey].map(async ([key, reqs]) => {
      for (let i = 0; i < reqs.length; i += 100) {
        const batch = reqs.slice(i, i + 100);
        const { data } = await client.POST('/api/v1/assets/get_link', {
          body: { ids: batch.map((r) => r.id), key, link_type: 'cdn', delivery: 'display', expiry: String(TTL_SECONDS) },
        });
        for (const link of data?.links ?? []) {
          if (!('url' in link) || !link.url) continue;
          const req = batch.find((r) => r.id === link.id);
          if (!req) continue;
          cache.set(cacheKey(req.id, key, req.version, 'display'), { url: link.url, until: Date.now() + REUSE_MS });
          out.set(req.id, link.url);
        }
      }
    }),
  );
  return out;
}

/** One signed link; `display` ones are cached like the thumbnails. Throws the contract error's message. */
export async function singleLink(client: DamClient, req: LinkRequest & { delivery?: 'display' | 'download'; expiry?: string }): Promise<string> {
  const delivery = req.delivery ?? 'display';
  const k = cacheKey(req.id, req.key, req.version, delivery);
  const hit = cache.get(k);
  if (hit && hit.until > Date.now() && req.expiry === undefined) return hit.url;
  const { data, error } = await client.GET('/api/v1/assets/{asset_id}/get_link', {
    params: { path: { asset_id: req.id }, query: { key: req.key, link_type: 'cdn', delivery, expiry: req.expiry ?? String(TTL_SECONDS) } },
  });
  if (!data) throw new Error((error as { error?: { message?: string } } | undefined)?.error?.message ?? 'No link');
  if (req.expiry === undefined) cache.set(k, { url: data.url, until: Date.now() + REUSE_MS });
  return data.url;
}
