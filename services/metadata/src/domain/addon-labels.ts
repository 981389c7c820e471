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
  const results = { ...current, [addon]: result };
  const tagging = results.auto_tagging;
  if (!tagging) return { [addon]: result };
  const own = (Array.isArray(tagging.labels) ? (tagging.labels as Array<{ label?: unknown }>) : []).filter((l) => !KNOWN_LABELS.some((k) => k.label === l.label));
  const known = KNOWN_LABELS.filter((k) => results[k.addon] && k.found(results[k.addon] as Record<string, unknown>)).map((k) => ({ label: k.label, confidence: 1 }));
  return { [addon]: result, auto_tagging: { ...tagging, labels: [...own, ...known] } };
}
