import type { Principal } from '@dam/auth-tokens';
import { newAssetId } from '../domain/asset-id';
import { parseSource, type IngestConfig } from '../domain/ingest';
import type { MetadataClient } from '../domain/ports';

export interface RequestIngestDeps {
  metadata: Pick<MetadataClient, 'startIngest'>;
  ownBucket: string;
  ingest: Pick<IngestConfig, 'allowHosts' | 's3Buckets'>;
}

/** Endpoint 3, the request: checks what can be checked now, then metadata creates the asset and its job. */
export async function requestIngest(deps: RequestIngestDeps, principal: Principal, body: { name: string; key: string }) {
  const parsed = parseSource(body.key, deps.ownBucket, deps.ingest);
  return deps.metadata.startIngest(principal, {
    id: newAssetId(),
    name: body.name,
    source: body.key,
    ...('refused' in parsed ? { refused: parsed.refused } : {}),
  });
}
