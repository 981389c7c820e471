import type { JobOutputs } from '@dam/events';
import { counter, histogram } from '@dam/metrics';

export type ConversionOutcome = 'ok' | 'error' | 'failed';

/** Keys come from group settings: past this many distinct ones, new keys are counted as "other". */
const MAX_KEYS = 50;
const seenKeys = new Set<string>();

const conversions = () =>
  counter<'key' | 'outcome'>({
    name: 'conversions_total',
    help: 'Conversions by key and outcome (ok, error); key "original" counts originals that failed as a whole',
    labelNames: ['key', 'outcome'],
  });
const duration = () =>
  histogram<'outcome'>({
    name: 'conversion_duration_seconds',
    help: "Time to make one asset's conversions, by outcome (ok, error: reported with errors, failed: will be retried)",
    labelNames: ['outcome'],
  });

function keyLabel(key: string): string {
  if (seenKeys.has(key)) return key;
  if (seenKeys.size >= MAX_KEYS) return 'other';
  seenKeys.add(key);
  return key;
}

/** Counts every conversion of a report under its key: made ones as ok, failed ones as error. */
export function countReport(report: JobOutputs): void {
  const c = conversions();
  for (const key of Object.keys(report.conversions)) c.inc({ key: keyLabel(key), outcome: 'ok' });
  for (const key of Object.keys(report.errors)) c.inc({ key: keyLabel(key), outcome: 'error' });
}

/** Starts timing one asset; the returned function records how it ended. */
export function startConversionTimer(): (outcome: ConversionOutcome) => void {
  const stop = duration().startTimer();
  return (outcome) => {
    stop({ outcome });
  };
}
