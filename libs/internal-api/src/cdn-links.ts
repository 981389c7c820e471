/** What one entry of a CDN prefetch or purge names: an asset (all its keys), or one key, or one file of a folder key. */
export interface CdnEntry {
  id: string;
  key?: string;
  file?: string;
}

const ASSET_ID = /^[A-Za-z0-9]{32}$/;
const EDGE_PATH = /^\/api\/v1\/files\/content\/([A-Za-z0-9]{32})(?:\/(.+))?$/;

/**
 * A prefetch or purge entry (CONTRACT §7): a 32-character asset id, or an http(s) `cdn` link of this suite
 * (`/api/v1/files/content/<id>[/<file>]?key=...`). metadata checks the asset when the job is asked for;
 * link-signing reads the key and file when it runs it. Undefined for anything else (a file path that would
 * leave its folder, a malformed escape).
 */
export function parseCdnEntry(entry: string): CdnEntry | undefined {
  if (ASSET_ID.test(entry)) return { id: entry };
  let url: URL;
  try {
    url = new URL(entry);
  } catch {
    return undefined;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
  const m = EDGE_PATH.exec(url.pathname);
  if (!m?.[1]) return undefined;
  let file: string | undefined;
  try {
    file = m[2] ? decodeURIComponent(m[2]) : undefined;
  } catch {
    return undefined;
  }
  if (file && file.split('/').some((s) => s === '' || s === '.' || s === '..')) return undefined;
  return { id: m[1], key: url.searchParams.get('key') ?? 'original', ...(file ? { file } : {}) };
}
