import type { ServiceSigner } from '@dam/auth-tokens';
import { AppError, type ErrorKind, unavailable } from '@dam/errors';
import { assetsExistResponse, createAssetsResponse, ingestResponse, internalClient, INTERNAL_PATHS, replaceOriginalResponse } from '@dam/internal-api';
import { z } from 'zod';
import type { MetadataClient } from '../domain/ports';
import { RegistrationUnknown } from '../domain/upload.errors';

const unknownOutcome = (error: unknown): unknown =>
  error instanceof AppError ? new RegistrationUnknown(error.kind, error.code, error.message, error.details, error.headers) : error;

// Client errors metadata answers are the caller's fault: they reach the client as they are.
const PASS_THROUGH: Record<number, ErrorKind> = { 400: 'BAD_REQUEST', 403: 'FORBIDDEN', 404: 'NOT_FOUND', 413: 'PAYLOAD_TOO_LARGE' };

function failure(res: { status: number; error?: { code?: string; message?: string; details?: unknown } }): AppError {
  const kind = PASS_THROUGH[res.status];
  if (kind && res.error?.code) return new AppError(kind, res.error.code, res.error.message ?? 'Invalid request', res.error.details);
  return unavailable(`The metadata service answered ${res.status}`, 'METADATA_UNAVAILABLE');
}

/** metadata `POST /internal/v1/assets` and `POST /internal/v1/assets/exists`, as upload, for a user (docs/internal-interfaces.md). */
export function httpMetadataClient(opts: { baseUrl: string; signer: ServiceSigner; timeoutMs?: number }): MetadataClient {
  const metadata = internalClient({ baseUrl: opts.baseUrl, audience: 'metadata', signer: opts.signer, timeoutMs: opts.timeoutMs ?? 15_000 });
  return {
    async createAssets(principal, files, customMetadata) {
      const res = await metadata
        .call({
          method: 'POST',
          path: INTERNAL_PATHS.assets,
          principal,
          body: { files, ...(customMetadata === undefined ? {} : { custom_metadata: customMetadata }) },
          response: createAssetsResponse,
        })
        .catch((error: unknown) => {
          throw unknownOutcome(error);
        });
      if (res.ok) return res.body.assets;
      throw failure(res);
    },
    async liveKeys(principal, ids, objectKeys) {
      const res = await metadata.call({
        method: 'POST',
        path: INTERNAL_PATHS.assetsExist,
        principal,
        body: { ids, object_keys: objectKeys },
        response: assetsExistResponse,
      });
      if (!res.ok) throw unavailable(`The metadata service answered ${res.status}`, 'METADATA_UNAVAILABLE');
      return res.body.live_keys;
    },
    async startIngest(principal, req) {
      const res = await metadata.call({ method: 'POST', path: INTERNAL_PATHS.ingest, principal, body: req, response: ingestResponse });
      if (res.ok) return res.body;
      throw failure(res);
    },
    async checkReplaceable(principal, assetId) {
      const res = await metadata.call({ method: 'GET', path: INTERNAL_PATHS.replaceable(assetId), principal, response: z.unknown() });
      if (!res.ok) throw failure(res);
    },
    async replaceOriginal(principal, assetId, file, customMetadata) {
      const res = await metadata
        .call({
          method: 'POST',
          path: INTERNAL_PATHS.replaceOriginal(assetId),
          principal,
          body: { ...file, ...(customMetadata === undefined ? {} : { custom_metadata: customMetadata }) },
          response: replaceOriginalResponse,
        })
        .catch((error: unknown) => {
          throw unknownOutcome(error);
        });
      if (res.ok) return res.body.asset;
      throw failure(res);
    },
    async existingAssets(principal, ids) {
      const res = await metadata.call({ method: 'POST', path: INTERNAL_PATHS.assetsExist, principal, body: { ids }, response: assetsExistResponse });
      if (!res.ok) throw unavailable(`The metadata service answered ${res.status}`, 'METADATA_UNAVAILABLE');
      return res.body.existing;
    },
  };
}
