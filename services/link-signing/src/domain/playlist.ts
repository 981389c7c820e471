import path from 'node:path/posix';

/**
 * A file of a multi-file conversion named relative to another (a playlist entry, a tile), as a path inside the
 * conversion's folder; undefined when it leaves the folder or is a URL of its own.
 */
export function resolveInFolder(fromFile: string, ref: string): string | undefined {
  if (/^[a-z][a-z0-9+.-]*:/i.test(ref) || ref.startsWith('/')) return undefined;
  const clean = ref.split(/[?#]/)[0] ?? '';
  const joined = path.normalize(path.join(path.dirname(fromFile), clean));
  if (joined === '.' || joined.startsWith('..') || joined.startsWith('/')) return undefined;
  return joined;
}

/**
 * An HLS playlist with every entry (variant playlists, segments, and `URI="..."` of keys, maps and media) turned
 * into a URL of its own by `urlOf` (a signed edge link), so a player that fetches the playlist from the edge
 * finds every file behind it. Entries that would leave the conversion's folder are left out.
 */
export function rewritePlaylist(text: string, playlistFile: string, urlOf: (file: string) => string): string {
  const out: string[] = [];
  for (const line of text.split(/\r?\n/)) {
    const trimmed = line.trim();
    if (trimmed === '') {
      out.push(line);
      continue;
    }
    if (trimmed.startsWith('#')) {
      out.push(
        trimmed.replace(/URI="([^"]*)"/g, (whole, ref: string) => {
          const file = resolveInFolder(playlistFile, ref);
          return file ? `URI="${urlOf(file)}"` : whole;
        }),
      );
      continue;
    }
    const file = resolveInFolder(playlistFile, trimmed);
    if (file) out.push(urlOf(file));
  }
  return out.join('\n');
}
