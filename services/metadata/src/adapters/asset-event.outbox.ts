import { randomUUID } from 'node:crypto';
import type { PoolClient } from '@dam/db';
import { assetEventSubject, dataSchemaSubject, type AssetEventType, type DeletionPayload } from '@dam/events';
import { writeOutbox } from '@dam/outbox';
import { toAssetData, type Asset } from '../domain/asset';
import type { AssetSchema } from '../domain/asset-schema';
import type { AssetEventWriter } from '../domain/ports';

/** Asset (and schema) events go out only through the outbox, in the transaction that made the change (never lost, never invented). */
export class OutboxAssetEventWriter implements AssetEventWriter {
  constructor(private readonly client: Pick<PoolClient, 'query'>) {}

  async writeDeletion(asset: Asset, payload: DeletionPayload): Promise<void> {
    await this.writeEnvelope(payload.event, asset, payload);
  }

  async write(type: 'file-saved' | 'file-processed' | 'file-data-updated', asset: Asset): Promise<void> {
    // The schema travels beside the asset data (the spec's payload has no member for it): search indexes the
    // schema's searchable fields.
    await this.writeEnvelope(type, asset, toAssetData(asset), { data_schema_id: asset.dataSchemaId });
  }

  /** A schema as saved, on `dam.schemas.<group>.<id>` (the search read model indexes its searchable fields). */
  async writeSchemaSaved(s: AssetSchema): Promise<void> {
    const id = `schema-${s.groupId}-${s.id}-${s.updatedAt.getTime()}`;
    await writeOutbox(this.client, {
      id,
      subject: dataSchemaSubject(s.groupId, s.id),
      payload: { id, group_id: s.groupId, schema_id: s.id, service_properties: s.serviceProperties, updated_at: s.updatedAt.toISOString() },
    });
  }

  private async writeEnvelope(type: AssetEventType, asset: Asset, data: unknown, extra: { data_schema_id?: number } = {}): Promise<void> {
    const id = randomUUID();
    await writeOutbox(this.client, {
      id,
      subject: assetEventSubject(asset.groupId, type),
      payload: {
        id,
        type,
        time: new Date().toISOString(),
        group_id: String(asset.groupId),
        asset_id: asset.id,
        version: asset.version,
        ...extra,
        data,
      },
    });
  }
}
