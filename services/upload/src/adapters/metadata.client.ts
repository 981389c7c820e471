import type { Principal, ServiceSigner } from '@dam/auth-tokens';
import { AppError, type ErrorKind, unavailable } from '@dam/errors';
import { assetsExistResponse, createAssetsResponse, internalClient, INTERNAL_PATHS } from '@dam/internal-api';

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

/** metadata `POST /internal/v1/assets` and `POST /internal/v1/assets/exists`, as upload, for a user (docs/internal-interfaces.md). */
export function httpMetadataClient(opts: { baseUrl: string; signer: ServiceSigner; timeoutMs?: number }): MetadataClient {
  const metadata = internalClient({ baseUrl: opts.baseUrl, audience: 'metadata', signer: opts.signer, timeoutMs: opts.timeoutMs ?? 15_000 });
  return {
    async createAssets(principal, files, customMetadata) {
      const res = await metadata.call({
        method: 'POST',
        path: INTERNAL_PATHS.assets,
        principal,
        body: { files, ...(customMetadata === undefined ? {} : { custom_metadata: customMetadata }) },
        response: createAssetsResponse,
      });
      if (res.ok) return res.body.assets;
      const kind = PASS_THROUGH[res.status];
      if (kind && res.error?.code) throw new AppError(kind, res.error.code, res.error.message ?? 'Invalid request', res.error.details);
      throw unavailable(`The metadata service answered ${res.status}`, 'METADATA_UNAVAILABLE');
    },
    async existingAssets(principal, ids) {
      const res = await metadata.call({ method: 'POST', path: INTERNAL_PATHS.assetsExist, principal, body: { ids }, response: assetsExistResponse });
      if (!res.ok) throw unavailable(`The metadata service answered ${res.status}`, 'METADATA_UNAVAILABLE');
      return res.body.existing;
    },
  };
}
