/** What other addons tell about a picture, as auto_tagging labels (CONTRACT §6: labels "where known"). */
const KNOWN_LABELS: ReadonlyArray<{ label: string; addon: string; found: (result: Record<string, unknown>) => boolean }> = [
  { label: 'has-faces', addon: 'face_recognition', found: (r) => Array.isArray(r.faces) && r.faces.length > 0 },
  { label: 'has-text', addon: 'text_extraction', found: (r) => Array.isArray(r.words) && r.words.length > 0 },
];

/**
 * The results to store after `addon` found `result`: that result, and auto_tagging's labels brought up to date with
 * what face_recognition and text_extraction found (`has-faces`, `has-text`, confidence 1), whichever ran last.
 */
export function addonResultsAfter(
  current: Readonly<Record<string, Record<string, unknown>>>,
  addon: string,
  result: Record<string, unknown>,
): Record<string, Record<string, unknown>> {
  const tagging = taggingAfter({ ...current, [addon]: result });
  return tagging ? { [addon]: result, auto_tagging: tagging } : { [addon]: result };
}

/**
 * Every result kept after Delete removed `addons` (CONTRACT §16): the others, auto_tagging's labels brought up to
 * date (the faces or the text it knew of may be gone).
 */
export function addonResultsWithout(
  current: Readonly<Record<string, Record<string, unknown>>>,
  addons: readonly string[],
): Record<string, Record<string, unknown>> {
  const results = Object.fromEntries(Object.entries(current).filter(([key]) => !addons.includes(key)));
  const tagging = taggingAfter(results);
  return tagging ? { ...results, auto_tagging: tagging } : results;
}

/** auto_tagging's result with the known labels of `results` in place of the ones it had; undefined without tags. */
function taggingAfter(results: Readonly<Record<string, Record<string, unknown>>>): Record<string, unknown> | undefined {
  const tagging = results.auto_tagging;
  if (!tagging) return undefined;
  const own = (Array.isArray(tagging.labels) ? (tagging.labels as Array<{ label?: unknown }>) : []).filter(
    (l) => !KNOWN_LABELS.some((k) => k.label === l.label),
  );
  const known = KNOWN_LABELS.filter((k) => results[k.addon] && k.found(results[k.addon] as Record<string, unknown>)).map((k) => ({
    label: k.label,
    confidence: 1,
  }));
  return { ...tagging, labels: [...own, ...known] };
}
