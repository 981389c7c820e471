/** The specification's limit on text extraction: at most this many words are indexed. */
export const MAX_INDEXED_WORDS = 500;

export interface OcrResult {
  /** The text as read, line by line. */
  text: string;
  /** Distinct words of 3 or more letters or digits, in reading order, at most MAX_INDEXED_WORDS. */
  words: string[];
}

/**
 * Reads tesseract's TSV output (level, page, block, par, line, word, left, top, width, height, conf, text): words of
 * one line are joined by spaces, lines by newlines, paragraphs by an empty line.
 */
export function ocrResultOf(tsv: string): OcrResult {
  const lines: string[] = [];
  let current: string[] = [];
  let lineKey = '';
  let paragraph = '';
  const flush = () => {
    if (current.length > 0) lines.push(current.join(' '));
    current = [];
  };
  for (const row of tsv.split('\n').slice(1)) {
    const cols = row.split('\t');
    if (cols.length < 12 || cols[0] !== '5') continue;
    const word = (cols[11] ?? '').trim();
    if (!word || Number(cols[10]) < 0) continue;
    const para = `${cols[1]}.${cols[2]}.${cols[3]}`;
    const key = `${para}.${cols[4]}`;
    if (key !== lineKey) {
      flush();
      if (paragraph && para !== paragraph) lines.push('');
      lineKey = key;
      paragraph = para;
    }
    current.push(word);
  }
  flush();
  const text = lines.join('\n').trim();
  const seen = new Set<string>();
  const words: string[] = [];
  for (const raw of text.split(/[^\p{L}\p{N}]+/u)) {
    if ([...raw].length < 3 || seen.has(raw.toLowerCase())) continue;
    seen.add(raw.toLowerCase());
    words.push(raw);
    if (words.length >= MAX_INDEXED_WORDS) break;
  }
  return { text, words };
}
