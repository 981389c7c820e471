const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/**
 * The value of the sample `name` whose labels include every one of `labels` (in any order), read from the
 * text format; undefined when no such sample exists. Meant for tests and checks, not for hot paths.
 */
export function sampleValue(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    const match = LINE.exec(line);
    if (!match || match[1] !== name) continue;
    const found: Record<string, string> = {};
    for (const [, key, value] of (match[2] ?? '').matchAll(LABEL)) if (key !== undefined) found[key] = value ?? '';
    if (Object.entries(labels).every(([k, v]) => found[k] === v)) return Number(match[3]);
  }
  return undefined;
}
