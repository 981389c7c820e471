import { isAppError } from '@dam/errors';
import { counter, histogram } from '@dam/metrics';
import type { UploadResult } from '../use-cases/upload-assets.use-case';

export type UploadOutcome = 'ok' | 'rejected' | 'failed';

const files = () => counter({ name: 'upload_files_total', help: 'Files stored and registered as assets' });
const bytes = () => counter({ name: 'upload_bytes_total', help: 'Bytes of the files stored and registered as assets' });
const duration = () =>
  histogram<'outcome'>({
    name: 'upload_duration_seconds',
    help: 'Upload requests from the first byte read to the answer, by outcome (ok, rejected, failed)',
    labelNames: ['outcome'],
  });

/** rejected: the client's fault (too large, malformed, invalid metadata); failed: ours or a dependency's. */
export function outcomeOf(error: unknown): UploadOutcome {
  return isAppError(error) && error.kind !== 'UNAVAILABLE' ? 'rejected' : 'failed';
}

/** Starts timing one upload request; call the returned function once with how it ended. */
export function startUploadTimer(): (outcome: UploadOutcome, result?: UploadResult) => void {
  const stop = duration().startTimer();
  return (outcome, result) => {
    stop({ outcome });
    if (!result) return;
    files().inc(result.files.length);
    bytes().inc(result.files.reduce((sum, f) => sum + f.size, 0));
  };
}
