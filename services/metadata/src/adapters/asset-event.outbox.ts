import { randomUUID } from 'node:crypto';
import type { PoolClient } from '@dam/db';
import { assetEventSubject, type AssetEventType, type DeletionPayload } from '@dam/events';
import { writeOutbox } from '@dam/outbox';
import { toAssetData, type Asset } from '../domain/asset';
import type { AssetEventWriter } from '../domain/ports';

/** Asset events go out only through the outbox, in the transaction that made the change (never lost, never invented). */
export class OutboxAssetEventWriter implements AssetEventWriter {
  constructor(private readonly client: Pick<PoolClient, 'query'>) {}

  async writeDeletion(asset: Asset, payload: DeletionPayload): Promise<void> {
    await this.writeEnvelope(payload.event, asset, payload);
  }

  async write(type: 'file-saved' | 'file-processed' | 'file-data-updated', asset: Asset): Promise<void> {
    await this.writeEnvelope(type, asset, toAssetData(asset));
  }

  private async writeEnvelope(type: AssetEventType, asset: Asset, data: unknown): Promise<void> {
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
        data,
      },
    });
  }
}
