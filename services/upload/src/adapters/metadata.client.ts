import type { Principal, ServiceSigner } from '@dam/auth-tokens';
import { AppError, type ErrorKind, unavailable } from '@dam/errors';
import { currentTraceHeaders } from '@dam/telemetry';

export interface RegisteredFile {
  id: string;
  name: string;
  size: number;
  checksum: string;
  content_type: string;
  object_key: string;
  metadata: Record<string, unknown>;
}

export interface CreatedAsset {
  id: string;
  status: string;
}

export interface MetadataClient {
  createAssets(principal: Principal, files: RegisteredFile[], customMetadata: unknown): Promise<CreatedAsset[]>;
  /** Which of these ids (of the principal's group) have an asset record, deleted ones included. */
  existingAssets(principal: Principal, ids: string[]): Promise<string[]>;
}

// Client errors metadata answers are the caller's fault: they reach the client as they are.
const PASS_THROUGH: Record<number, ErrorKind> = { 400: 'BAD_REQUEST', 413: 'PAYLOAD_TOO_LARGE' };

interface ErrorBody {
  error?: { code?: string; message?: string; details?: unknown };
}

/** metadata `POST /internal/v1/assets` and `POST /internal/v1/assets/exists`, as upload, for a user (docs/internal-interfaces.md). */
export function httpMetadataClient(opts: { baseUrl: string; signer: ServiceSigner; timeoutMs?: number }): MetadataClient {
  const base = opts.baseUrl.replace(/\/$/, '');
  const headers = (principal: Principal, path: string) => ({
    'content-type': 'application/json',
    // fetch (undici) is not auto-instrumented: carry the trace by hand so one trace spans upload → processing.
    ...currentTraceHeaders(),
    ...opts.signer.headers({ audience: 'metadata', method: 'POST', path, principal }),
  });
  return {
    async createAssets(principal, files, customMetadata) {
      let res: Response;
      try {
        res = await fetch(`${base}/internal/v1/assets`, {
          method: 'POST',
          headers: headers(principal, '/internal/v1/assets'),
          body: JSON.stringify({ files, ...(customMetadata === undefined ? {} : { custom_metadata: customMetadata }) }),
          signal: AbortSignal.timeout(opts.timeoutMs ?? 15_000),
        });
      } catch {
        throw unavailable('The metadata service is unavailable', 'METADATA_UNAVAILABLE');
      }
      if (res.status === 201 || res.status === 200) return ((await res.json()) as { assets: CreatedAsset[] }).assets;
      const kind = PASS_THROUGH[res.status];
      const body = (await res.json().catch(() => ({}))) as ErrorBody;
      if (kind && body.error?.code) {
        throw new AppError(kind, body.error.code, body.error.message ?? 'Invalid request', body.error.details);
      }
      throw unavailable(`The metadata service answered ${res.status}`, 'METADATA_UNAVAILABLE');
    },
    async existingAssets(principal, ids) {
      const res = await fetch(`${base}/internal/v1/assets/exists`, {
        method: 'POST',
        headers: headers(principal, '/internal/v1/assets/exists'),
        body: JSON.stringify({ ids }),
        signal: AbortSignal.timeout(opts.timeoutMs ?? 15_000),
      }).catch(() => {
        throw unavailable('The metadata service is unavailable', 'METADATA_UNAVAILABLE');
      });
      if (res.status !== 200) throw unavailable(`The metadata service answered ${res.status}`, 'METADATA_UNAVAILABLE');
      return ((await res.json()) as { existing: string[] }).existing;
    },
  };
}
